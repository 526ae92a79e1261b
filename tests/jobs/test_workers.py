"""Serve-only replicas and workers on one store: a replica queues, a worker runs, all hear.

A replica made with `takes_jobs=False` (`serve --no-worker`) creates the jobs its clients
start with no worker; a worker (`giftgenius worker`) claims them, one claimer winning
each, and runs them. The replica's client still hears every event, in order, because
each process follows what the others write to the store (Redis pub/sub hints, or a look
at the SQLite file's recent changes). Cancelling on the replica stops the worker's run.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from herald import Server
from herald.jobs.store import JobStore
from herald.runtime import JobContext
from herald.stores.memory import MemoryJobStore
from herald.stores.redis import RedisJobStore
from herald.stores.sqlite import SqliteJobStore
from herald.testing import InMemoryClient, connect
from tests.redis_server import redis_server

pytestmark = pytest.mark.slow  # worker processes on a shared store

StoreFactory = Callable[[], JobStore]


def gift_server(store: JobStore, *, takes_jobs: bool, ran: list[str], lease: float = 15.0) -> Server:
    server = Server("workers", takes_jobs=takes_jobs, job_lease_seconds=lease, job_shutdown_grace_seconds=0)
    server.use_job_store(store)

    @server.job()
    async def count(steps: int, ctx: JobContext) -> dict[str, Any]:
        """Counts to `steps`, one every 10 ms."""
        ran.append(server.jobs.service.worker_id)
        for step in range(1, steps + 1):
            await ctx.report_progress(100 * step / steps, f"step {step}")
            await asyncio.sleep(0.01)
        return {"steps": steps}

    @server.job()
    async def stuck(ctx: JobContext) -> dict[str, Any]:
        """Reports once, then waits for ever: it writes nothing more to notice a cancel by."""
        ran.append(server.jobs.service.worker_id)
        await ctx.report_progress(10, "waiting")
        await asyncio.Event().wait()
        return {}

    return server


@pytest.fixture(params=["sqlite", "redis"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    if request.param == "sqlite":
        yield lambda: SqliteJobStore(tmp_path / "store.db")
        return
    with redis_server() as url:
        prefixes = itertools.count()
        prefix = f"workers-{next(prefixes)}"
        yield lambda: RedisJobStore.from_url(url, prefix=prefix)


@asynccontextmanager
async def started(*servers: Server) -> AsyncIterator[None]:
    for server in servers:
        await server.jobs.start_up()
    try:
        yield
    finally:
        for server in servers:
            await server.jobs.shut_down()


async def job_events(client: InMemoryClient, job_id: str, until: str) -> list[dict[str, Any]]:
    """The job's notifications as the client received them, once the `until` kind arrived."""

    def of_job() -> list[dict[str, Any]]:
        return [
            n["params"]
            for n in client.notifications
            if n["method"].startswith("notifications/job/") and n["params"]["jobId"] == job_id
        ]

    async with asyncio.timeout(15):
        while not any(event["type"] == f"job.{until}" for event in of_job()):  # noqa: ASYNC110  # the client's inbox has no event to wait on
            await asyncio.sleep(0.02)
    return of_job()


async def test_a_serve_only_replica_queues_and_a_worker_runs_while_its_client_hears_all(
    stores: StoreFactory,
) -> None:
    ran: list[str] = []
    replica = gift_server(stores(), takes_jobs=False, ran=ran)
    workers = [gift_server(stores(), takes_jobs=True, ran=ran) for _ in range(2)]
    async with started(replica, *workers), connect(replica) as client:
        # Some jobs end at once: within one look at the SQLite file, they are told whole all the same.
        answers = [await client.call_tool("count", {"steps": 5 * (n % 2)}) for n in range(4)]
        ids = [answer["structuredContent"]["jobId"] for answer in answers]
        for job_id in ids:
            events = await job_events(client, job_id, "completed")
            kinds = [event["type"].removeprefix("job.") for event in events]
            assert kinds[:2] == ["created", "started"], kinds
            assert kinds[-1] == "completed", kinds
            sequences = [int(event["eventId"].rsplit(":", 1)[1]) for event in events]
            assert sequences == sorted(set(sequences)), "each event once, in order"
            progress = [event["percentage"] for event in events if event["type"] == "job.progress"]
            assert progress == sorted(progress), "progress never goes back"
            assert progress[-1:] in ([], [100])
            job = await replica.jobs.service.get(job_id)
            assert job.worker in {worker.jobs.service.worker_id for worker in workers}
        assert len(ran) == 4, "each job ran exactly once"
        assert replica.jobs.service.worker_id not in ran, "the serve-only replica ran nothing"


async def test_a_job_cancelled_on_the_replica_stops_on_its_worker(stores: StoreFactory) -> None:
    ran: list[str] = []
    replica = gift_server(stores(), takes_jobs=False, ran=ran)
    worker = gift_server(stores(), takes_jobs=True, ran=ran)
    async with started(replica, worker), connect(replica) as client:
        job_id = (await client.call_tool("count", {"steps": 10_000}))["structuredContent"]["jobId"]
        await job_events(client, job_id, "progress")
        await client.call_tool("cancel_job", {"jobId": job_id})
        async with asyncio.timeout(10):
            while worker.jobs.runner.running:  # noqa: ASYNC110  # the runner ends the task itself
                await asyncio.sleep(0.02)
        job = await worker.jobs.service.get(job_id)
        assert job.status == "cancelled"
        assert job.percentage < 100, "the worker stopped instead of running to the end"


async def test_a_cancel_on_the_replica_stops_a_worker_s_function_that_writes_nothing(
    stores: StoreFactory,
) -> None:
    ran: list[str] = []
    replica = gift_server(stores(), takes_jobs=False, ran=ran)
    worker = gift_server(stores(), takes_jobs=True, ran=ran)
    async with started(replica, worker), connect(replica) as client:
        job_id = (await client.call_tool("stuck"))["structuredContent"]["jobId"]
        await job_events(client, job_id, "progress")
        await client.call_tool("cancel_job", {"jobId": job_id})
        async with asyncio.timeout(10):
            while worker.jobs.runner.running:  # noqa: ASYNC110  # the runner ends the task itself
                await asyncio.sleep(0.02)
        assert (await worker.jobs.service.get(job_id)).status == "cancelled"


async def test_a_queued_job_of_a_tool_no_worker_knows_waits_for_one_that_does(stores: StoreFactory) -> None:
    """On Redis the stranger was handed the queue entry: it lets it go idle, and the worker takes it over."""
    ran: list[str] = []
    replica = gift_server(stores(), takes_jobs=False, ran=ran)
    stranger = Server("other tools", job_lease_seconds=0.6)
    stranger.use_job_store(stores())
    async with started(replica, stranger), connect(replica) as client:
        job_id = (await client.call_tool("count", {"steps": 1}))["structuredContent"]["jobId"]
        assert await stranger.jobs.runner.membership.take_queued() == []
        assert await stranger.jobs.runner.membership.recover() == [], "a queued job is not an orphan to fail"
        assert (await replica.jobs.service.get(job_id)).status == "pending"
        worker = gift_server(stores(), takes_jobs=True, ran=ran, lease=0.6)
        async with started(worker):
            assert (await job_events(client, job_id, "completed"))[-1]["type"] == "job.completed"
        assert ran == [worker.jobs.service.worker_id]


async def test_a_queued_job_a_stopped_worker_was_handed_is_taken_over_by_another() -> None:
    """The worker read the job from the Redis queue and died before it claimed it."""
    ran: list[str] = []
    with redis_server() as url:

        def store() -> RedisJobStore:
            return RedisJobStore.from_url(url, prefix="takeover")

        replica = gift_server(store(), takes_jobs=False, ran=ran)
        async with started(replica), connect(replica) as client:
            job_id = (await client.call_tool("count", {"steps": 2}))["structuredContent"]["jobId"]
            stopped = store()
            assert [entry.job_id for entry in await stopped.read_queue("stopped-worker", ["count"], 10)] == [
                job_id
            ]
            await stopped.aclose()
            worker = gift_server(store(), takes_jobs=True, ran=ran, lease=0.6)
            async with started(worker):
                assert await worker.jobs.runner.membership.take_queued() == [], (
                    "the queue handed the job out already"
                )
                assert (await job_events(client, job_id, "completed"))[-1]["type"] == "job.completed"
            assert ran == [worker.jobs.service.worker_id], "the job ran once, on the worker that took it over"
            assert await store().read_queue("anyone", ["count"], 10) == []


async def test_a_worker_never_takes_over_its_own_running_job() -> None:
    """Its own lease looks lapsed (the renewal was written late, or its loop was held up), yet
    the worker asking is alive: recovery leaves its running job alone, which runs once."""
    ran: list[str] = []
    now = [0.0]
    store = MemoryJobStore(clock=lambda: now[0])
    worker = gift_server(store, takes_jobs=True, ran=ran, lease=15.0)
    async with started(worker), connect(worker) as client:
        job_id = (await client.call_tool("stuck", {}))["structuredContent"]["jobId"]
        await job_events(client, job_id, "progress")
        now[0] += 60  # past every lease, this worker's own included
        assert [job.job_id for job in await store.orphaned()] == [job_id], "the store alone calls it orphaned"
        assert await worker.jobs.runner.membership.recover() == []
        job = await store.get(job_id)
        assert job is not None
        assert (job.status, job.stage, job.sequence) == ("running", "waiting", 3)
    assert ran == [worker.jobs.service.worker_id]
