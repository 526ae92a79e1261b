"""The Redis stores pass the same conformance suite as memory and SQLite, on a private redis-server."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from herald.jobs.events import JobEvent
from herald.jobs.machine import TRANSITIONS, IllegalTransition, Outcome
from herald.jobs.record import JobRecord
from herald.jobs.service import JobService
from herald.jobs.store import JobStore
from herald.stores.errors import StoreError
from herald.stores.redis import RedisEventLog, RedisJobStore, RedisSessionStore, transition_table_lua
from herald.stores.sessions import SessionStore
from herald.testing import check_event_log, check_job_queue, check_job_store, check_session_store
from tests.redis_server import redis_server, restartable_redis

pytestmark = pytest.mark.slow  # a redis-server of its own

_prefixes = itertools.count(1)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


def fresh() -> str:
    """A key prefix of its own for each store: a new store must start empty."""
    return f"test{next(_prefixes)}"


async def test_redis_event_log(redis_url: str) -> None:
    async def make() -> RedisEventLog:
        return RedisEventLog.from_url(redis_url, prefix=fresh())

    await check_event_log(make)


async def test_redis_job_store(redis_url: str) -> None:
    async def make() -> RedisJobStore:
        return RedisJobStore.from_url(redis_url, prefix=fresh())

    await check_job_store(make)


async def test_redis_job_queue(redis_url: str) -> None:
    """The queue of jobs created with no worker: a Stream read by the workers' consumer group."""

    async def make() -> JobStore:
        return RedisJobStore.from_url(redis_url, prefix=fresh())

    await check_job_queue(make)


async def test_redis_session_store(redis_url: str) -> None:
    """Expiry is Redis's own (PEXPIRE), so the wait is real: just past the sessions' 0.2 s."""

    prefixes: list[str] = []

    async def make() -> RedisSessionStore:
        prefixes.append(fresh())
        return RedisSessionStore.from_url(redis_url, prefix=prefixes[-1])

    async def wait() -> None:
        await asyncio.sleep(0.35)

    async def peer(_: SessionStore) -> SessionStore:
        return RedisSessionStore.from_url(redis_url, prefix=prefixes[-1])  # another replica's client

    await check_session_store(make, expiry_wait=wait, make_peer=peer)


def test_the_scripts_transition_table_is_the_machine_s() -> None:
    moves = {
        f"{status.value}|{event.value}"
        for (status, event), (outcome, _) in TRANSITIONS.items()
        if outcome is Outcome.MOVE
    }
    table = transition_table_lua()
    assert {entry.split('"')[1] for entry in table.strip("{}").split(", ")} == moves


async def test_every_write_is_hinted_creation_included(redis_url: str) -> None:
    """A job's creation is hinted like its changes: a queued job wakes the workers at once."""
    prefix = fresh()
    following, writing = (RedisJobStore.from_url(redis_url, prefix=prefix) for _ in range(2))
    heard: asyncio.Queue[tuple[str, int]] = asyncio.Queue()

    async def hear(job_id: str, sequence: int, since: int | None = None) -> None:
        heard.put_nowait((job_id, sequence))

    async def next_of(job_id: str) -> int:
        """The sequence of the next hint about `job_id` (hints of the probes are passed over)."""
        while (hinted := await heard.get())[0] != job_id:
            pass
        return hinted[1]

    writer = JobService(writing)
    try:
        async with asyncio.TaskGroup() as tasks:
            follower = tasks.create_task(following.follow_writers(hear))
            async with asyncio.timeout(10):
                # The subscription is in place once a write made after it is heard.
                while heard.empty():  # pub/sub says nothing of a new subscriber
                    await writer.create("probe", {})
                    await asyncio.sleep(0.05)
                job = await writer.create("queued", {}, queued=True)
                assert await next_of(job.job_id) == 1, "the creation is hinted"
                await writer.start(job.job_id)
                assert await next_of(job.job_id) == 2, "and each change after it"
            follower.cancel()
    finally:
        await following.aclose()
        await writing.aclose()


async def test_events_of_concurrent_jobs_go_in_one_pipeline_even_after_redis_lost_its_scripts(
    redis_url: str,
) -> None:
    """A Redis restarted without its scripts answers NOSCRIPT: the batch is sent again, once."""
    store = RedisJobStore.from_url(redis_url, prefix=fresh())
    service = JobService(store)
    try:
        jobs = [await service.create("bench", {}) for _ in range(20)]
        await asyncio.gather(*(service.start(job.job_id) for job in jobs))
        await store._redis.script_flush()  # as a restarted Redis has none
        await asyncio.gather(*(service.progress(job.job_id, 50, "half") for job in jobs))
        await asyncio.gather(*(service.complete(job.job_id, "herald://r") for job in jobs))
        for job in jobs:
            kinds = [event.kind for event in await store.events_after(job.job_id)]
            assert kinds == ["created", "started", "progress", "completed"], "each event once, in order"
        assert await store.unfinished() == [], "the ended jobs left the index of unfinished ones"
    finally:
        await store.aclose()


async def test_a_chain_with_one_bad_move_is_refused_whole(redis_url: str) -> None:
    """The record script checks every event of a chain before it writes any."""
    store = RedisJobStore.from_url(redis_url, prefix=fresh())
    service = JobService(store)
    try:
        job = await service.create("tool", {})
        await service.start(job.job_id)
        running = await store.get(job.job_id)
        assert running is not None

        def step(sequence: int, status: str, percentage: float, kind: str) -> tuple[JobRecord, JobEvent]:
            changed = JobRecord.from_json(running.to_json())
            changed.status, changed.percentage, changed.sequence = status, percentage, sequence
            return changed, JobEvent(
                job.job_id, sequence, kind, changed.updated_at, {"percentage": percentage}
            )

        after_the_end = [
            step(3, "running", 10, "progress"),
            step(4, "completed", 100, "completed"),
            step(5, "running", 20, "progress"),
        ]
        backwards = [step(3, "running", 30, "progress"), step(4, "running", 20, "progress")]
        for chain, reason in ((after_the_end, "illegal"), (backwards, "backwards")):
            with pytest.raises(IllegalTransition, match=reason):
                await store.record_chain(chain)
            assert [event.kind for event in await store.events_after(job.job_id)] == ["created", "started"]
            assert await store.get(job.job_id) == running, f"a {reason} chain writes nothing"
    finally:
        await store.aclose()


async def test_a_call_made_while_redis_restarts_waits_for_it(tmp_path: Path) -> None:
    """A restart of a few seconds is a pause for a caller, on a new connection, not an error."""
    with restartable_redis(tmp_path, appendonly=True) as redis:
        store = RedisJobStore.from_url(redis.url)
        try:
            now = "2026-01-01T00:00:00.000Z"
            job = JobRecord("kept", "tool", now, now, sequence=1)
            await store.create(job, JobEvent("kept", 1, "created", now, {"status": "pending"}))
            assert await store.get("kept") == job, "the pool holds a connection from now on"
            redis.stop()
            reading = asyncio.ensure_future(store.get("kept"))
            await asyncio.sleep(1.0)
            assert not reading.done(), "the call waits while Redis is away"
            redis.start()
            async with asyncio.timeout(10):
                assert await reading == job
        finally:
            await store.aclose()


async def test_a_creation_sent_again_is_recognised_and_another_is_refused(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A creation whose answer was lost with its connection is sent again by the client; it must
    not be refused as a second job with that id, which would leave the job created but unrun."""
    store = RedisJobStore.from_url(redis_url, prefix=fresh())
    now = "2026-01-01T00:00:00.000Z"
    job = JobRecord("twice", "tool", now, now, sequence=1)
    created = JobEvent("twice", 1, "created", now, {"status": "pending"})
    try:
        monkeypatch.setattr("herald.stores.redis.jobs.secrets.token_hex", lambda size: "one-try")
        await store.create(job, created)
        await store.create(job, created)  # the same try, sent again
        monkeypatch.setattr("herald.stores.redis.jobs.secrets.token_hex", lambda size: "another-try")
        with pytest.raises(StoreError, match="exists already"):
            await store.create(job, created)
        assert await store.get("twice") == job
        assert len(await store.events_after("twice")) == 1
    finally:
        await store.aclose()
