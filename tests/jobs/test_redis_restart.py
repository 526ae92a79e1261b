"""Redis restarts, as operators do them, cost no job: with and without persistence.

Without persistence (or after FLUSHALL, or a failover to an empty replica) Redis comes back
empty: the workers' consumer group is gone with everything else, and they make it again,
so the jobs started afterwards run. With an append-only file, a few seconds without Redis
are a pause: commands are sent again on new connections, a running resumable job goes on,
and every process hears the events written while its hints could not arrive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from herald import Server
from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.jobs.service import JobService
from herald.jobs.store import Hear, Subscribed
from herald.runtime import JobContext, JobRunner
from herald.stores.errors import StoreError
from herald.stores.memory import MemoryJobStore
from herald.stores.redis import RedisJobStore
from herald.testing import connect, free_port
from tests.giftgenius.test_bulk_job import employees
from tests.jobs.test_rolling_restart import assert_one_gapless_history
from tests.jobs.test_shutdown import result_documents, uninterrupted_result, until_ended
from tests.modern import structured
from tests.redis_server import redis_server, restartable_redis
from tests.servers import GIFTGENIUS, running_past, started


def replica_and_worker(stack: ExitStack, store: str, tmp_path: Path) -> str:
    """A serve-only replica and a worker on `store`; the replica's URL."""
    port = free_port()
    replica = [*GIFTGENIUS, "serve", "--quiet", "--no-worker", "--port", str(port), "--store", store]
    stack.enter_context(started(replica, tmp_path / "replica.log", port))
    worker = [*GIFTGENIUS, "worker", "--store", store, "--job-lease", "2"]
    stack.enter_context(started(worker, tmp_path / "worker.log", measured=False)).worker_id()
    return f"http://127.0.0.1:{port}/mcp"


@pytest.mark.slow
def test_workers_take_jobs_again_after_redis_comes_back_empty(tmp_path: Path) -> None:
    csv = employees(20)
    with restartable_redis(tmp_path, appendonly=False) as redis, ExitStack() as stack:
        url = replica_and_worker(stack, redis.url, tmp_path)
        before = structured(url, "start_bulk_gift_analysis", {"csv": csv})["jobId"]
        assert until_ended(url, before, 60)["status"] == "completed"
        redis.restart(down_seconds=1)
        after = structured(url, "start_bulk_gift_analysis", {"csv": csv})["jobId"]
        ended = until_ended(url, after, 60)
        assert ended["status"] == "completed", ended


def counting_server(store: RedisJobStore, *, takes_jobs: bool) -> Server:
    server = Server("restarts", takes_jobs=takes_jobs, job_lease_seconds=1.0)
    server.use_job_store(store)

    @server.job()
    async def count(steps: int, ctx: JobContext) -> dict[str, Any]:
        """Counts to `steps`, one every 10 ms."""
        for step in range(1, steps + 1):
            await ctx.report_progress(100 * step / steps, f"step {step}")
            await asyncio.sleep(0.01)
        return {"steps": steps}

    return server


async def ended_on(server: Server, job_id: str) -> JobRecord:
    """The job once `server` has heard that it ended (bounded)."""
    ended: asyncio.Future[JobRecord] = asyncio.get_running_loop().create_future()

    def heard(job: JobRecord, event: JobEvent) -> None:
        if job.job_id == job_id and job.terminal and not ended.done():
            ended.set_result(job)

    stop = server.jobs.service.add_listener(heard)
    try:
        current = await server.jobs.service.get(job_id)
        if current.terminal:
            return current
        async with asyncio.timeout(30):
            return await ended
    finally:
        stop()


@pytest.mark.slow
async def test_a_flushed_redis_gets_its_workers_group_back() -> None:
    with redis_server() as url:
        replica = counting_server(RedisJobStore.from_url(url), takes_jobs=False)
        worker = counting_server(RedisJobStore.from_url(url), takes_jobs=True)
        await replica.jobs.start_up()
        await worker.jobs.start_up()
        try:
            async with connect(replica) as client:
                first = (await client.call_tool("count", {"steps": 2}))["structuredContent"]["jobId"]
                assert (await ended_on(replica, first)).status == "completed"
                flusher = aioredis.Redis.from_url(url)
                await flusher.flushall()
                await flusher.aclose()
                second = (await client.call_tool("count", {"steps": 2}))["structuredContent"]["jobId"]
                assert (await ended_on(replica, second)).status == "completed", "the worker took it"
        finally:
            await worker.jobs.shut_down()
            await replica.jobs.shut_down()


@pytest.mark.slow
async def test_a_redis_restart_with_persistence_costs_a_running_job_nothing(tmp_path: Path) -> None:
    csv = employees(20_000, distinct=True)
    expected = await uninterrupted_result(csv)
    with restartable_redis(tmp_path, appendonly=True) as redis, ExitStack() as stack:
        url = replica_and_worker(stack, redis.url, tmp_path)
        job_id = structured(url, "start_bulk_gift_analysis", {"csv": csv})["jobId"]
        assert await running_past(redis.url, job_id, 20) is not None, "the job ended before the restart"
        redis.restart(down_seconds=3)
        status = structured(url, "get_job_status", {"jobId": job_id})
        assert status["status"] in ("running", "completed"), status
        ended = until_ended(url, job_id)
        assert ended["status"] == "completed", ended.get("error")
        assert result_documents(url, job_id) == expected
        later = structured(url, "start_bulk_gift_analysis", {"csv": employees(20)})["jobId"]
        assert until_ended(url, later, 60)["status"] == "completed", "the pool's connections work again"
    assert_one_gapless_history(ended["events"])


@pytest.mark.slow
async def test_another_replica_hears_a_job_through_redis_restarts(tmp_path: Path) -> None:
    """Each restart drops the hint subscription; the follower comes back soon, every time, and
    catches up on what was written while it was away: here the job's ending, written as soon
    as Redis is back, perhaps before the replica listens again."""
    finish = asyncio.Event()
    with restartable_redis(tmp_path, appendonly=True) as redis:
        listener = counting_server(RedisJobStore.from_url(redis.url), takes_jobs=False)
        worker = counting_server(RedisJobStore.from_url(redis.url), takes_jobs=True)

        @worker.job(name="waits")
        @listener.job(name="waits")
        async def waits(ctx: JobContext) -> dict[str, Any]:
            """Reports once, then finishes when the test says."""
            await ctx.report_progress(50, "waiting")
            await finish.wait()
            return {}

        heard: list[JobEvent] = []
        progressed = asyncio.Event()

        def hear(job: JobRecord, event: JobEvent) -> None:
            heard.append(event)
            if event.kind == "progress":
                progressed.set()

        listener.jobs.service.add_listener(hear)
        await listener.jobs.start_up()
        await worker.jobs.start_up()
        try:
            async with connect(listener) as client:
                job_id = (await client.call_tool("waits", {}))["structuredContent"]["jobId"]
                async with asyncio.timeout(15):
                    await progressed.wait()
                for _ in range(4):  # enough for a back-off that never resets to reach 16 s
                    await asyncio.to_thread(redis.restart, 1.5)
                finish.set()  # the ending is written as soon as the worker reaches Redis again
                assert (await ended_on(listener, job_id)).status == "completed"
            events = [event for event in heard if event.job_id == job_id]
            assert [event.sequence for event in events] == list(range(1, len(events) + 1)), (
                "every event, once, in order"
            )
        finally:
            await worker.jobs.shut_down()
            await listener.jobs.shut_down()


async def test_the_follower_pauses_less_again_once_hints_come() -> None:
    """Pauses double while the store refuses, and start from one second once it answers."""
    runner = JobRunner(JobService(MemoryJobStore()))
    pauses: list[float] = []
    six = asyncio.Event()

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 6:
            six.set()

    async def follow(hear: Hear, subscribed: Subscribed) -> None:
        if len(pauses) == 6:
            await asyncio.Event().wait()  # followed for good
        if len(pauses) in (0, 3):
            await subscribed()  # this try reached the store before the connection dropped
        raise StoreError("connection lost")

    runner.sleep = sleep
    task = asyncio.ensure_future(runner.membership._follow(follow))
    try:
        async with asyncio.timeout(5):
            await six.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert pauses == [1.0, 2.0, 4.0, 1.0, 2.0, 4.0]


async def test_catch_up_tells_what_was_written_while_hints_were_lost() -> None:
    store = MemoryJobStore()
    here, elsewhere = JobService(store), JobService(store)
    told: list[tuple[str, int]] = []
    here.add_listener(lambda job, event: told.append((event.job_id, event.sequence)))
    job = await elsewhere.create("tool", {})
    ended = await elsewhere.create("tool", {})
    await here.hear(job.job_id, 1, 0)
    await here.hear(ended.job_id, 1, 0)
    await elsewhere.cancel(ended.job_id)
    await here.hear(ended.job_id, 2)  # its ending was heard: nothing more to look for
    await elsewhere.start(job.job_id)
    await elsewhere.progress(job.job_id, 50, "half")
    await elsewhere.settle(job.job_id)
    told.clear()
    reads: list[str] = []
    original: Callable[[str], Awaitable[JobRecord | None]] = store.get

    async def counted(job_id: str) -> JobRecord | None:
        reads.append(job_id)
        return await original(job_id)

    store.get = counted  # type: ignore[method-assign]  # counts what catch_up reads
    await here.catch_up()
    assert told == [(job.job_id, 2), (job.job_id, 3)], "what it missed, in order, once"
    assert ended.job_id not in reads, "a job seen to end is not read again"
