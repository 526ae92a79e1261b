"""Every EventLog backend passes the same conformance suite."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from herald.jobs.store import JobStore
from herald.stores import EventLog, MemoryEventLog, SqliteEventLog, StoredEvent, StoreError
from herald.stores.memory import MemoryJobStore, MemorySessionStore
from herald.stores.sessions import SessionStore
from herald.stores.sqlite import SqliteJobStore, SqliteSessionStore
from herald.testing import check_event_log, check_job_store, check_session_store


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


#: `stream_events` as herald wrote it before job events were logged by reference.
OLD_STREAM_EVENTS = """CREATE TABLE stream_events (
    session TEXT NOT NULL,
    stream TEXT NOT NULL,
    position INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (session, stream, position)
) WITHOUT ROWID"""


async def test_an_event_log_of_the_old_layout_opens_and_keeps_its_events(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(OLD_STREAM_EVENTS)
        db.execute("INSERT INTO stream_events VALUES ('s', 'g', 1, ?)", (b"an old event",))
        db.commit()
    log = SqliteEventLog(path)
    try:
        assert await log.read_after("s", "g", 0) == [StoredEvent(1, b"an old event")]
        assert await log.append_job_event("s", "g", "j1", 1) == 2, "job events follow the old rows"
        assert await log.position_of_job_event("s", "g", "j1", 1) == 2
    finally:
        await log.aclose()
    reopened = SqliteEventLog(path)  # upgraded once: opening again changes nothing
    try:
        assert [event.position for event in await reopened.read_after("s", "g", 0)] == [1, 2]
    finally:
        await reopened.aclose()
    with contextlib.closing(sqlite3.connect(path)) as db:  # a herald of the old layout still writes
        db.execute("INSERT INTO stream_events (session, stream, position, data) VALUES ('s', 'g', 3, x'00')")
        db.commit()


async def test_a_stream_events_table_herald_did_not_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE stream_events (id INTEGER PRIMARY KEY, payload TEXT)")
        db.commit()
    with pytest.raises(StoreError, match="did not write"):
        SqliteEventLog(path)


async def test_memory_job_store() -> None:
    async def make() -> JobStore:
        return MemoryJobStore()

    await check_job_store(make)


async def test_sqlite_job_store(tmp_path: Path) -> None:
    async def make() -> JobStore:
        return SqliteJobStore(tmp_path / "jobs.db")

    await check_job_store(make)


async def test_memory_session_store() -> None:
    now = [0.0]

    async def make() -> SessionStore:
        return MemorySessionStore(clock=lambda: now[0])

    async def step() -> None:
        now[0] += 0.5

    await check_session_store(make, expiry_wait=step)


async def test_sqlite_session_store(tmp_path: Path) -> None:
    now = [1_000_000.0]

    async def make() -> SessionStore:
        # Looking for the peer's messages often keeps the follow check short.
        return SqliteSessionStore(tmp_path / "store.db", clock=lambda: now[0], follow_every_seconds=0.01)

    async def step() -> None:
        now[0] += 0.5

    async def peer(_: SessionStore) -> SessionStore:
        return await make()  # another process's store on the same file

    await check_session_store(make, expiry_wait=step, make_peer=peer)
