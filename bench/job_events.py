"""Durable job events per second from one process, on each store.

Each event is a real state change through `JobService` (decide, compare-and-set write of
the status and the event, announce). Progress is written behind the job's function (see
`herald.jobs.service`), so each job ends with `complete`, which returns only once every
event before it is stored: the time counted is until all of them are durable.

- one job reporting progress as fast as it can;
- 100 jobs at once, each reporting as fast as it can.

Stores: SQLite on a fresh file, Redis on a private `redis-server` started here (nothing
on disk), and memory for reference. The target is 10,000 events/s on SQLite and on Redis.

  python bench/job_events.py [--events 20000] [--jobs 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from herald.jobs.service import JobService
from herald.jobs.store import JobStore
from herald.stores.memory import MemoryJobStore
from herald.stores.redis import RedisJobStore
from herald.stores.sqlite import SqliteJobStore
from herald.testing import redis_server

TARGET = 10_000


async def one_job(service: JobService, events: int) -> None:
    job = await service.create("bench", {})
    await service.start(job.job_id)
    for step in range(1, events + 1):
        await service.progress(job.job_id, 100 * step / events, "step")
    await service.complete(job.job_id, "herald://jobs/bench/result.json")
    stored = await service.reader.events_after(job.job_id)
    if [event.sequence for event in stored] != list(range(1, events + 4)):
        raise SystemExit(f"job_events: job {job.job_id} stored {len(stored)} events, not {events + 3}")


async def measure(make: Callable[[], Awaitable[JobStore]], events: int, jobs: int) -> dict[str, float]:
    store = await make()
    service = JobService(store)
    try:
        started = time.perf_counter()
        await one_job(service, events)
        single = (events + 3) / (time.perf_counter() - started)
        each = max(1, events // jobs)
        started = time.perf_counter()
        async with asyncio.TaskGroup() as tasks:
            for _ in range(jobs):
                tasks.create_task(one_job(service, each))
        many = jobs * (each + 3) / (time.perf_counter() - started)
    finally:
        await store.aclose()
    return {"one_job_events_per_s": round(single), f"{jobs}_jobs_events_per_s": round(many)}


async def run(events: int, jobs: int, folder: Path, redis_url: str) -> dict[str, dict[str, float]]:
    async def memory() -> JobStore:
        return MemoryJobStore()

    async def sqlite() -> JobStore:
        return SqliteJobStore(folder / f"bench-{time.monotonic_ns()}.db")

    async def redis() -> JobStore:
        return RedisJobStore.from_url(redis_url, prefix=f"bench{time.monotonic_ns()}")

    return {
        "memory": await measure(memory, events, jobs),
        "sqlite": await measure(sqlite, events, jobs),
        "redis": await measure(redis, events, jobs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--jobs", type=int, default=100)
    args = parser.parse_args()
    try:
        with tempfile.TemporaryDirectory() as folder, redis_server() as url:
            report = asyncio.run(run(args.events, args.jobs, Path(folder), url))
    except FileNotFoundError as missing:
        print(f"job_events: {missing}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    met = all(value >= TARGET for name in ("sqlite", "redis") for value in report[name].values())
    print(f"target {TARGET:,} events/s on SQLite and Redis: {'PASS' if met else 'FAIL'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
