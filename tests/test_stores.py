"""Every EventLog backend passes the same conformance suite."""

from __future__ import annotations

from pathlib import Path

from herald.stores import EventLog, MemoryEventLog, SqliteEventLog
from herald.stores.conformance import check_event_log


async def test_memory_event_log() -> None:
    async def make() -> EventLog:
        return MemoryEventLog()

    await check_event_log(make)


async def test_sqlite_event_log(tmp_path: Path) -> None:
    async def make() -> EventLog:
        return SqliteEventLog(tmp_path / "store.db")

    await check_event_log(make)


async def test_sqlite_events_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "store.db"
    first = SqliteEventLog(path)
    await first.append("s", "a", b"kept")
    await first.aclose()
    second = SqliteEventLog(path)
    assert [event.data for event in await second.read_after("s", "a", 0)] == [b"kept"]
    assert await second.append("s", "a", b"next") == 2
    await second.aclose()
