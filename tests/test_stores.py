"""Every EventLog backend passes the same conformance suite."""

from __future__ import annotations

from pathlib import Path

from herald.stores import EventLog, MemoryEventLog, SqliteEventLog
from herald.stores.jobstore import JobStore
from herald.stores.memory import MemoryJobStore
from herald.stores.sqlite import SqliteJobStore
from herald.testing import check_event_log, check_job_store


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


async def test_memory_job_store() -> None:
    async def make() -> JobStore:
        return MemoryJobStore()

    await check_job_store(make)


async def test_sqlite_job_store(tmp_path: Path) -> None:
    async def make() -> JobStore:
        return SqliteJobStore(tmp_path / "jobs.db")

    await check_job_store(make)
