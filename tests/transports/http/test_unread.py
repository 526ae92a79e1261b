"""`UnreadFrames`: what a response holds for a client that reads slowly, bounded in bytes too."""

from __future__ import annotations

import asyncio

from herald.protocol.messages import Notification
from herald.stores.memory import MemoryEventLog
from herald.transports.http.streams import UNLOGGED_HIGH_WATER, DurableStream
from herald.transports.http.unread import MAX_UNREAD_BYTES, MAX_WRITE_BYTES, UnreadFrames

FRAME = b"data: " + b"x" * 994 + b"\n\n"  # a kilobyte


async def test_frames_wait_once_their_bytes_reach_the_bound() -> None:
    unread = UnreadFrames()
    taken = 0
    while unread.offer(FRAME):
        taken += 1
    assert taken == MAX_UNREAD_BYTES // len(FRAME), "far fewer than the frame bound"
    assert unread.buffered_bytes <= MAX_UNREAD_BYTES
    batch = await unread.take()
    assert len(batch) <= MAX_WRITE_BYTES, "one write takes a bounded batch"
    assert not unread.offer(FRAME), "the batch counts until it is written"
    await unread.take()  # the first batch is written
    assert unread.offer(FRAME)
    assert unread.buffered_bytes <= MAX_UNREAD_BYTES


async def test_a_frame_larger_than_the_bound_goes_alone() -> None:
    unread = UnreadFrames()
    large = b"x" * (2 * MAX_UNREAD_BYTES)
    assert unread.offer(large), "an empty buffer takes any frame, or it could never be sent"
    assert not unread.offer(FRAME)
    assert await unread.take() == large


async def test_a_cut_drops_what_is_queued_and_ends() -> None:
    unread = UnreadFrames()
    unread.offer(b"first")
    unread.offer(b"second")
    assert unread.cut() == b"first"
    assert unread.buffered_bytes == 0
    assert await unread.take() == b"", "ended"
    assert unread.offer(b"late"), "an ended buffer drops what it is offered"
    assert not unread


async def test_a_listener_that_reads_nothing_never_holds_more_than_the_bound() -> None:
    """Kilobyte messages keep coming to a stream whose listener reads nothing: what it holds
    stays under `MAX_UNREAD_BYTES` (4,096 frames of them would be 4 MiB), then it is cut off."""
    log = MemoryEventLog()
    async with asyncio.TaskGroup() as tasks:  # the stream's owner
        stream = DurableStream(log, "session", "g", spawn=tasks.create_task)
        stream.stall_seconds = 0.05
        live = stream.listen()
        stream.start()
        held: list[int] = []
        for number in range(2000):
            stream.send(Notification("notifications/message", {"level": "info", "data": "x" * 900}))
            if number % 100 == 0:
                await asyncio.sleep(0)  # let the pump run
                held.append(live.buffered_bytes)
        await stream.aclose()
        assert max(held) <= MAX_UNREAD_BYTES
        assert max(held) > MAX_UNREAD_BYTES // 2, "the listener was filled up to about the bound"
        assert not stream.listening, "and then let go"
        assert len(await log.read_after("session", "g", 0)) == 2000, "everything is in the log"


async def test_a_stream_without_a_log_cuts_a_stalled_listener_its_messages_pile_up_behind() -> None:
    """Live job events for a 2026-07-28 listen cannot wait: rather than queue them without
    bound behind a listener that reads nothing, the stream cuts it off, and says so."""
    cut: list[bool] = []
    async with asyncio.TaskGroup() as tasks:
        stream = DurableStream(None, "", "p", spawn=tasks.create_task)
        stream.on_cut = lambda: cut.append(True)
        live = stream.listen()
        stream.start()
        sent = 0
        async with asyncio.timeout(5):
            while not cut:
                stream.send(Notification("notifications/message", {"level": "info", "data": "x" * 900}))
                sent += 1
                if sent % 50 == 0:
                    await asyncio.sleep(0)
        assert live.ended
        assert stream._incoming.qsize() <= 2 * UNLOGGED_HIGH_WATER + 50, "the queue stayed bounded"
        await stream.aclose()
    assert await live.take() == b"", "what it had not read was dropped with it"
