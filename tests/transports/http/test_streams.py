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
