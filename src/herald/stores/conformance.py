"""One conformance suite for every `EventLog` implementation.

Public API so any backend (ours or a user's) proves itself the same way:
`await check_event_log(make_log)` with a factory for a fresh, empty log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from herald.stores.eventlog import EventLog

EventLogFactory = Callable[[], Awaitable[EventLog]]


async def check_event_log(make_log: EventLogFactory) -> None:
    """Raise AssertionError at the first property the log breaks."""
    log = await make_log()
    try:
        assert await log.read_after("s", "a", 0) == [], "a new log is empty"
        positions = [await log.append("s", "a", f"event {n}".encode()) for n in range(1, 6)]
        assert positions == [1, 2, 3, 4, 5], "positions count from 1 per stream"
        assert await log.append("s", "b", b"other stream") == 1, "streams are numbered apart"
        assert await log.append("t", "a", b"other session") == 1, "sessions are numbered apart"
        after = await log.read_after("s", "a", 2)
        assert [(event.position, event.data) for event in after] == [
            (3, b"event 3"),
            (4, b"event 4"),
            (5, b"event 5"),
        ], "read_after returns exactly what followed, oldest first"
        assert await log.read_after("s", "a", 5) == [], "nothing follows the last event"
        assert [event.data for event in await log.read_after("t", "a", 0)] == [b"other session"]
        assert await log.read_after("nobody", "a", 0) == [], "another session's id finds nothing"
        binary = bytes(range(256))
        position = await log.append("s", "bin", binary)
        assert (await log.read_after("s", "bin", position - 1))[0].data == binary, "bytes survive as they are"
        await log.forget("s")
        assert await log.read_after("s", "a", 0) == [], "forget drops the session's streams"
        assert await log.read_after("s", "b", 0) == []
        assert len(await log.read_after("t", "a", 0)) == 1, "forget leaves other sessions alone"
    finally:
        await log.aclose()
