"""A store that refuses writes (a full disk) stops the job, which ends `store_error` once writes work.

The store is a real `SqliteJobStore` whose connection refuses writes the way SQLite does
when the disk is full: the statements run, then COMMIT raises `sqlite3.OperationalError`.
So the mapping to `StoreError`, the rollback of the failed transaction and the runner's
retries are all the real ones; only the disk is pretend.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from herald.jobs.service import MAX_WRITTEN_BEHIND, JobService
from herald.runtime import JobContext, JobRunner
from herald.runtime.membership import JobFunction
from herald.runtime.runner import STORE_FAILED
from herald.stores import StoreError
from herald.stores.sqlite import SqliteJobStore, connect


class FullDisk(sqlite3.Connection):
    """A connection whose commits fail with SQLite's own disk-full error while `full` is set."""

    full = False
    refused = 0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if self.full and sql == "COMMIT":
            self.refused += 1
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, parameters)


class Disk:
    """The test's hand on the store's connection, and the runner's clock between retries."""

    def __init__(self, path: Path) -> None:
        self.connection: FullDisk | None = None
        self.delays: list[float] = []
        self.heal_after = 3
        self.store = SqliteJobStore(path, connect=self.open)

    def open(self, path: str | Path) -> sqlite3.Connection:
        connection = connect(path, factory=FullDisk)
        assert isinstance(connection, FullDisk)
        self.connection = connection
        return connection

    @property
    def db(self) -> FullDisk:
        assert self.connection is not None
        return self.connection

    async def sleep(self, delay: float) -> None:
        """Between two retries: after `heal_after` of them, space returns."""
        self.delays.append(delay)
        if len(self.delays) == self.heal_after:
            self.db.full = False
        await asyncio.sleep(0)


async def run_until_ended(disk: Disk, job_function: Any) -> tuple[JobService, str]:
    service = JobService(disk.store)
    runner = JobRunner(service, retry_delay=0.05, max_retry_delay=0.1, sleep=disk.sleep)
    job = await service.create("work", {"csv": "name\nAda\n"})
    runner.launch(job, job_function, {}, "ctx", lambda level, data: None)
    async with asyncio.timeout(10):
        await runner.wait_ended(job.job_id)
    assert runner.running == 0
    return service, job.job_id


@pytest.mark.parametrize("failing_write", ["progress", "result"])
async def test_a_refused_write_fails_the_job_once_writes_work_again(
    tmp_path: Path, failing_write: str
) -> None:
    disk = Disk(tmp_path / "jobs.db")
    went_on = False

    async def work(ctx: JobContext) -> dict[str, Any]:
        nonlocal went_on
        await ctx.report_progress(10, "first")
        await ctx.saved()  # the first is stored
        disk.db.full = True
        if failing_write == "progress":
            # Refused: written behind, so a report soon after (at the latest once as many as
            # may wait have gathered) raises, and the function stops there.
            for step in range(MAX_WRITTEN_BEHIND + 2):
                await ctx.report_progress(20 + step * 70 / (MAX_WRITTEN_BEHIND + 2), "more")
            went_on = True
        return {"done": True}  # for "result": saving the result is refused

    service, job_id = await run_until_ended(disk, work)
    job = await service.get(job_id)
    assert job.status == "failed"
    assert job.error is not None
    assert job.error["code"] == "store_error"
    assert job.error["message"] == STORE_FAILED
    assert job.error["hint"]
    assert not went_on, "the job function was stopped once the write was refused"
    kinds = [event.kind for event in await disk.store.events_after(job_id)]
    assert kinds == ["created", "started", "progress", "failed"], "nothing refused was half-written"
    assert await disk.store.get_result(job_id, "result.json") is None
    # The write that stopped the job, then one refused ending per retry before space returned.
    assert disk.db.refused == 1 + disk.heal_after
    assert disk.delays == [0.05, 0.1, 0.1], "the delays double up to their bound"
    await disk.store.aclose()


async def test_a_job_that_swallows_the_store_error_still_ends_store_error(tmp_path: Path) -> None:
    disk = Disk(tmp_path / "jobs.db")
    disk.heal_after = 1
    later_write: list[BaseException] = []

    async def stubborn(ctx: JobContext) -> dict[str, Any]:
        disk.db.full = True
        try:
            await ctx.report_progress(20, "refused")
            await ctx.saved()  # written behind: the refusal is known here
        except StoreError:
            disk.db.full = False  # even with space back, the job may not carry on
            try:
                await ctx.report_progress(30, "after")
            except StoreError as again:
                later_write.append(again)
        return {}

    service, job_id = await run_until_ended(disk, stubborn)
    job = await service.get(job_id)
    assert job.status == "failed"
    assert job.error is not None
    assert job.error["code"] == "store_error"
    assert len(later_write) == 1, "a write after a refusal is refused too"
    kinds = [event.kind for event in await disk.store.events_after(job_id)]
    assert kinds == ["created", "started", "failed"]
    await disk.store.aclose()


async def test_a_refused_ending_at_shutdown_is_left_for_the_next_start(tmp_path: Path) -> None:
    disk = Disk(tmp_path / "jobs.db")
    disk.heal_after = 1_000  # the disk stays full
    service = JobService(disk.store)
    runner = JobRunner(service, sleep=disk.sleep)
    job = await service.create("work", {})
    refused = asyncio.Event()

    async def work(ctx: JobContext) -> dict[str, Any]:
        disk.db.full = True
        try:
            await ctx.report_progress(20, "refused")
        finally:
            refused.set()
        return {}

    runner.launch(job, work, {}, "ctx", lambda level, data: None)
    async with asyncio.timeout(10):
        await refused.wait()
        await runner.aclose()  # returns although the ending could never be written
    assert (await service.get(job.job_id)).status == "running"
    await disk.store.aclose()
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    try:
        next_start = JobRunner(JobService(reopened))
        next_start.functions = {"work": JobFunction(work, "ctx")}
        assert await next_start.membership.recover() == [job.job_id]
        after = await reopened.get(job.job_id)
        assert after is not None
        assert after.error is not None
        assert after.error["code"] == "interrupted"
    finally:
        await reopened.aclose()


async def test_sqlite_errors_leave_the_store_as_store_errors(tmp_path: Path) -> None:
    disk = Disk(tmp_path / "jobs.db")
    service = JobService(disk.store)
    job = await service.create("work", {})
    disk.db.full = True
    with pytest.raises(StoreError, match="disk is full") as raised:
        await service.start(job.job_id)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError), "the original is chained"
    disk.db.full = False
    assert await service.start(job.job_id) is not None, "the failed transaction was rolled back"
    await disk.store.aclose()
