"""DurableStream listeners: a client that leaves cannot end the response of the one after it."""

from __future__ import annotations

import asyncio

from herald.protocol.messages import Notification
from herald.stores.memory import MemoryEventLog
from herald.transports.http.streams import DurableStream


async def test_a_late_detach_of_an_old_listener_spares_the_new_one() -> None:
    async with asyncio.TaskGroup() as tasks:  # the stream's owner
        stream = DurableStream(MemoryEventLog(), "session", "s", spawn=tasks.create_task)
        stream.start()
        first = stream.listen()
        second = stream.listen()  # a resuming client takes over; the first response ends
        assert await first.take() == b""
        stream.detach(first)  # the first client's disconnect is noticed only now
        stream.send(Notification("notifications/message", {"level": "info", "data": "still here"}))
        frame = await asyncio.wait_for(second.take(), 5)
        assert b"still here" in frame
        stream.detach(second)
        assert await second.take() == b"", "its own detach still ends it"
        await stream.aclose()


async def test_a_listener_cut_off_for_reading_nothing_is_counted() -> None:
    from herald.testing.telemetry import recorded

    with recorded() as seen:
        async with asyncio.TaskGroup() as tasks:
            stream = DurableStream(MemoryEventLog(), "session", "s", spawn=tasks.create_task)
            stream.stall_seconds = 0.05
            stream.start()
            stream.listen()  # and never read
            for _ in range(200):
                stream.send(Notification("notifications/message", {"level": "info", "data": "x" * 4096}))
            async with asyncio.timeout(10):
                while seen.total("herald.http.backpressure", {"herald.backpressure.action": "cut"}) == 0:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            await stream.aclose()
    assert seen.total("herald.http.backpressure", {"herald.backpressure.action": "cut"}) == 1
    assert seen.total("herald.http.backpressure", {"herald.backpressure.action": "dropped"}) > 0
