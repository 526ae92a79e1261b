"""SQLite runs off the event loop: a locked file holds up its store's calls, never the loop.

The stores run every statement on one thread of their own (`StoreThread`). These tests
lock the file from another connection, as another process would, and check that the
loop keeps serving while a store call waits for the lock, that the call then completes,
and that cancelling a caller never leaves a write done behind its back.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from herald import Server
from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.stores import StoreError
from herald.stores.sqlite import SQLITE_ERRORS, SqliteEventLog, SqliteJobStore, connect
from herald.stores.thread import StoreThread
from herald.testing import connect as connect_client

NOW = "2026-01-01T00:00:00.000Z"


def patient(path: str | Path) -> sqlite3.Connection:
    """A store connection that waits a minute for a lock: far longer than these tests hold one."""
    return connect(path, busy_timeout=60)


@contextmanager
def locked(path: Path) -> Iterator[threading.Event]:
    """Hold `BEGIN EXCLUSIVE` on the file from another thread until the returned event is set."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")
            taken.set()
            release.wait()
            db.execute("COMMIT")
        finally:
            db.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(10), "the other connection took the lock"
        yield release
    finally:
        release.set()
        holder.join()


async def loop_keeps_serving(blocked: asyncio.Task[Any]) -> None:
    """While `blocked` waits for the file, other coroutines run and a client's ping is answered."""
    steps = 0

    async def count() -> None:
        nonlocal steps
        for _ in range(1000):
            steps += 1
            await asyncio.sleep(0)

    await asyncio.gather(count(), ping())
    assert steps == 1000
    assert not blocked.done(), "the store call is still waiting for the lock"


async def ping() -> None:
    async with connect_client(Server("bystander")) as client:
        assert await client.request("ping") == {}


def job(job_id: str = "j1") -> tuple[JobRecord, JobEvent]:
    record = JobRecord(job_id, "tool", NOW, NOW, sequence=1)
    return record, JobEvent(job_id, 1, "created", NOW, {"tool": "tool", "status": "pending"})


async def test_an_append_waits_for_a_locked_file_while_the_loop_runs(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    log = SqliteEventLog(path, connect=patient)
    try:
        with locked(path) as release:
            append = asyncio.create_task(log.append("s", "a", b"waited"))
            await loop_keeps_serving(append)
            release.set()
            assert await append == 1
        assert [event.data for event in await log.read_after("s", "a", 0)] == [b"waited"]
    finally:
        await log.aclose()


async def test_a_job_event_waits_for_a_locked_file_while_the_loop_runs(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteJobStore(path, connect=patient)
    try:
        record, created = job()
        await store.create(record, created)
        record.status, record.sequence = "running", 2
        with locked(path) as release:
            writing = asyncio.create_task(store.record(record, JobEvent("j1", 2, "started", NOW, {})))
            await loop_keeps_serving(writing)
            release.set()
            await writing
        assert await store.get("j1") == record
    finally:
        await store.aclose()


async def test_every_statement_runs_on_the_stores_one_thread(tmp_path: Path) -> None:
    seen: set[int] = set()

    class ThreadNoting(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            seen.add(threading.get_ident())
            return super().execute(sql, parameters)

    store = SqliteJobStore(tmp_path / "jobs.db", connect=lambda path: connect(path, factory=ThreadNoting))
    record, created = job()
    await store.create(record, created)
    assert await store.get("j1") == record
    await store.put_result("j1", "r", "text/plain", b"x")
    await store.aclose()
    assert len(seen) == 1, "one thread"
    assert threading.get_ident() not in seen, "and not the loop's"


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    log = SqliteEventLog(tmp_path / "store.db")
    await log.aclose()
    await log.aclose()  # twice is harmless
    with pytest.raises(StoreError, match="closed"):
        await log.append("s", "a", b"late")


async def test_a_cancelled_caller_of_a_running_call_gets_its_result_then_the_cancellation() -> None:
    thread = StoreThread("test", SQLITE_ERRORS)
    started, release = threading.Event(), threading.Event()
    seen: list[object] = []

    def write() -> int:
        started.set()
        release.wait()
        return 42

    async def caller() -> None:
        seen.append(await thread.call(write))
        await asyncio.sleep(0)  # the cancellation arrives here, after the write's result
        seen.append("went on")

    task = asyncio.create_task(caller())
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    task.cancel()  # a second cancellation changes nothing
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [42], "the write's result reached its caller; the cancellation came next"
    await thread.aclose()


async def test_a_call_cancelled_before_it_started_never_runs() -> None:
    thread = StoreThread("test", SQLITE_ERRORS)
    busy, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def occupy() -> None:
        busy.set()
        release.wait()

    occupying = asyncio.create_task(thread.call(occupy))
    assert await asyncio.to_thread(busy.wait, 10)
    queued = asyncio.create_task(thread.call(ran.append, "late write"))
    await asyncio.sleep(0)  # a scheduling step: `queued` submits its call and waits
    queued.cancel()
    # The worker is still busy, so the withdrawal must take effect before it is freed.
    async with asyncio.timeout(10):
        with pytest.raises(asyncio.CancelledError):
            await queued
    release.set()
    await occupying
    await thread.aclose()  # every call made so far has run or been withdrawn
    assert ran == []


async def test_a_timeout_around_a_running_call_still_times_out() -> None:
    """The re-delivered cancellation is the timeout's own, so `asyncio.timeout` recognises it."""
    thread = StoreThread("test", SQLITE_ERRORS)
    loop = asyncio.get_running_loop()
    release = threading.Event()
    seen: list[str] = []

    async def caller() -> None:
        async with asyncio.timeout(None) as deadline:

            def expire() -> None:  # on the loop: the timeout fires, then the write may end
                deadline.reschedule(loop.time())
                loop.call_soon(release.set)

            def write() -> str:
                loop.call_soon_threadsafe(expire)
                release.wait()
                return "written"

            seen.append(await thread.call(write))
            await asyncio.sleep(0)
            seen.append("went on")

    with pytest.raises(TimeoutError):
        await caller()
    assert seen == ["written"]
    await thread.aclose()
