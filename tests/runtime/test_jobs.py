"""`Jobs`, the one door to jobs: start, visible, cancel and the waits, on a real store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from herald.jobs.machine import JobStatus
from herald.runtime import JobContext, ShuttingDown
from herald.runtime.jobs import Jobs, UnknownJob
from herald.runtime.membership import JobFunction
from herald.server.app import Server
from herald.stores.sqlite import SqliteJobStore
from herald.testing import job_ended, job_event

RELEASE = asyncio.Event()


async def gated(ctx: JobContext, label: str) -> dict[str, Any]:
    await ctx.report_progress(10, "waiting")
    await RELEASE.wait()
    return {"label": label}


def no_log(job_id: str) -> Any:
    return lambda level, data: None


@pytest.fixture
async def jobs(tmp_path: Path) -> AsyncIterator[Jobs]:
    RELEASE.clear()
    door = Jobs(lease_seconds=5)
    door.use_store(SqliteJobStore(tmp_path / "jobs.db"))
    door.add_function("gated", JobFunction(gated, "ctx", resumable=False))
    await door.start_up()
    try:
        yield door
    finally:
        RELEASE.set()
        await door.shut_down(grace=1)


async def start(jobs: Jobs, owner: str | None = "ana", **options: Any) -> str:
    job = await jobs.start(
        "gated", gated, {"label": "x"}, context_name="ctx", job_log=no_log, owner=owner, **options
    )
    return job.job_id


async def test_a_started_job_runs_here_and_is_heard_to_end(jobs: Jobs) -> None:
    job_id = await start(jobs)
    async with asyncio.timeout(10):
        progress = await job_event(jobs, job_id, "progress")
        assert progress.payload["stage"] == "waiting"
        RELEASE.set()
        ended = await jobs.until_ended(job_id)
    assert ended.status == JobStatus.COMPLETED
    assert (await jobs.until_ended(job_id)).status == JobStatus.COMPLETED, "an ended job is answered at once"


async def test_a_process_that_takes_no_jobs_queues_them_unless_asked_to_run_here(tmp_path: Path) -> None:
    door = Jobs(takes_jobs=False)
    door.use_store(SqliteJobStore(tmp_path / "jobs.db"))
    try:
        queued = await door.get(await start(door))
        assert (queued.status, queued.worker) == (JobStatus.PENDING, None), "left for a worker to claim"
        readied: list[str] = []
        here = await door.start(
            "gated",
            gated,
            {"label": "y"},
            context_name="ctx",
            job_log=no_log,
            owner=None,
            here=True,
            before_run=lambda job: readied.append(job.job_id),
        )
        assert readied == [here.job_id], "readied before it runs"
        RELEASE.set()
        async with asyncio.timeout(10):
            assert (await door.until_ended(here.job_id)).status == JobStatus.COMPLETED
    finally:
        await door.shut_down(grace=1)


async def test_visible_answers_another_owner_as_if_there_were_no_job(jobs: Jobs) -> None:
    job_id = await start(jobs, owner="ana")
    assert (await jobs.visible(job_id, "ana")).job_id == job_id
    assert (await jobs.visible(job_id, None)).job_id == job_id, "without authentication the id is enough"
    with pytest.raises(UnknownJob):
        await jobs.visible(job_id, "bob")
    with pytest.raises(UnknownJob):
        await jobs.visible("0" * 32, None)


async def test_cancel_stops_a_job_here_and_leaves_an_ended_one_as_it_ended(jobs: Jobs) -> None:
    running = await start(jobs)
    async with asyncio.timeout(10):
        await job_event(jobs, running, "started")
        await jobs.cancel(running)
        assert (await jobs.until_ended(running)).status == JobStatus.CANCELLED
        done = await start(jobs)
        RELEASE.set()
        assert (await jobs.until_ended(done)).status == JobStatus.COMPLETED
        await jobs.cancel(done)
    assert (await jobs.get(done)).status == JobStatus.COMPLETED, "cancelling an ended job changes nothing"


async def test_a_job_of_another_process_is_cancelled_in_the_store(tmp_path: Path) -> None:
    store = tmp_path / "jobs.db"
    serving = Jobs(takes_jobs=False)
    serving.use_store(SqliteJobStore(store))
    try:
        job_id = await start(serving)
        await serving.cancel(job_id, "changed my mind")
        cancelled = await serving.get(job_id)
        assert cancelled.status == JobStatus.CANCELLED
        events = await serving.reader.events_after(job_id)
        assert events[-1].payload.get("reason") == "changed my mind"
    finally:
        await serving.shut_down()


async def test_no_job_starts_once_shutdown_has_begun(tmp_path: Path) -> None:
    door = Jobs()
    door.use_store(SqliteJobStore(tmp_path / "jobs.db"))
    await door.start_up()
    await door.shut_down(grace=0)
    assert not door.accepting
    with pytest.raises(ShuttingDown):
        await start(door)


async def test_knobs_read_once_refuse_a_late_change_and_the_others_take_effect(
    jobs: Jobs, tmp_path: Path
) -> None:
    jobs.max_running = 3
    assert jobs.runner.max_running == 3
    jobs.retention_seconds = 7.0
    assert jobs.runner.membership.retention_seconds == 7.0
    with pytest.raises(RuntimeError, match="job lease"):
        jobs.lease_seconds = 9
    with pytest.raises(RuntimeError, match="runs jobs"):
        jobs.takes_jobs = False
    with pytest.raises(RuntimeError, match="job store"):
        jobs.use_store(SqliteJobStore(tmp_path / "other.db"))


async def test_the_testing_waits_hear_a_server_job_without_polling() -> None:
    server = Server("waits")

    @server.job()
    async def quick(ctx: JobContext) -> dict[str, str]:
        await ctx.report_progress(50, "half")
        return {"done": "yes"}

    job = await server.jobs.start("quick", quick, {}, context_name="ctx", job_log=no_log, owner=None)
    try:
        async with asyncio.timeout(10):
            ended = await job_ended(server, job.job_id)
            half = await job_event(server, job.job_id, "progress")  # stored already: read back
        assert ended.status == JobStatus.COMPLETED
        assert half.payload["percentage"] == 50
    finally:
        await server.jobs.shut_down()


async def test_a_door_given_a_clock_and_ids_uses_them(tmp_path: Path) -> None:
    """Tests (and replays) can fix what a job's id and timestamps are."""
    ids = iter(["job-one", "job-two"])
    door = Jobs(clock=lambda: "2026-01-02T03:04:05.000Z", new_id=lambda: next(ids))
    door.use_store(SqliteJobStore(tmp_path / "jobs.db"))
    try:
        first = await door.start(
            "gated", gated, {"label": "x"}, context_name="ctx", job_log=no_log, owner=None
        )
        assert (first.job_id, first.created_at) == ("job-one", "2026-01-02T03:04:05.000Z")
        assert (await door.get("job-one")).updated_at == "2026-01-02T03:04:05.000Z"
    finally:
        RELEASE.set()
        await door.shut_down(grace=1)
