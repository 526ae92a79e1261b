"""Job pick-up latency: from a serve-only replica queueing a job to a worker starting it.

A `giftgenius serve --no-worker`-like replica (a `Server` with `takes_jobs=False`, in
this process) queues jobs in a shared store; one worker process (`herald.worker`, a real
subprocess) claims and runs them. Two latencies per job, from the replica's `create`:

- `started`: until the worker recorded `job.started` (the two events' store timestamps,
  same machine clock, millisecond resolution);
- `heard`: until the replica heard of that start (what a client of the replica sees).

Jobs go one at a time (`sequential`) and then `--burst` at once. Stores: Redis (a private
`redis-server`: pub/sub hints wake the worker) and SQLite (processes follow each other by
looking at the file five times a second).

  python bench/job_pickup.py [--jobs 200] [--burst 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from herald import Server
from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord, epoch_seconds
from herald.jobs.store import JobStore
from herald.stores.redis import RedisJobStore
from herald.stores.sqlite import SqliteJobStore
from herald.testing import redis_server

WORKER = textwrap.dedent(
    """
    import sys
    from herald import Server
    from herald.stores.location import open_stores
    from herald.worker import run_worker

    server = Server("pickup")
    server.use_job_store(open_stores(sys.argv[1], app_name="pickup").jobs)

    @server.job()
    async def noop() -> dict:
        "Does nothing."
        return {}

    print("ready", flush=True)
    run_worker(server)
    """
)


def percentiles(samples: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": round(cuts[49] * 1000, 2), "p99_ms": round(cuts[98] * 1000, 2)}


def measure(store_url: str, make_store: Callable[[], JobStore], jobs: int, burst: int) -> dict[str, Any]:
    """Run one worker process on the store while this process queues and times jobs."""
    script = Path(tempfile.mkdtemp()) / "worker.py"
    script.write_text(WORKER)
    worker = subprocess.Popen([sys.executable, str(script), store_url], stdout=subprocess.PIPE)
    assert worker.stdout is not None
    worker.stdout.readline()  # ready
    try:
        return asyncio.run(run(make_store, jobs, burst))
    finally:
        worker.terminate()
        worker.wait(timeout=20)


async def run(make_store: Callable[[], JobStore], jobs: int, burst: int) -> dict[str, Any]:
    replica = Server("pickup", takes_jobs=False)
    replica.use_job_store(make_store())

    @replica.job()
    async def noop() -> dict[str, Any]:
        """Does nothing (the worker runs it)."""
        return {}

    service = replica.jobs.service
    heard: dict[str, asyncio.Future[float]] = {}

    def hearing(job_id: str) -> asyncio.Future[float]:
        """When the replica heard the job start: a start heard before `create` returned counts too."""
        return heard.setdefault(job_id, asyncio.get_running_loop().create_future())

    def on_event(job: JobRecord, event: JobEvent) -> None:
        if event.kind == "started" and not (waiting := hearing(job.job_id)).done():
            waiting.set_result(time.perf_counter())

    service.add_listener(on_event)
    await replica.jobs.start_up()
    await asyncio.sleep(1.5)  # the worker has taken its lease and follows the store

    async def one() -> tuple[float, float]:
        created_at = time.perf_counter()
        job = await service.create("noop", {}, queued=True)
        heard_at = await asyncio.wait_for(hearing(job.job_id), 30)
        events = await service.reader.events_after(job.job_id, 0)
        started = next(event for event in events if event.kind == "started")
        return epoch_seconds(started.timestamp) - epoch_seconds(events[0].timestamp), heard_at - created_at

    try:
        sequential = [await one() for _ in range(jobs)]
        print(f"  {jobs} one at a time: done", file=sys.stderr)
        together = await asyncio.gather(*(one() for _ in range(burst)))
        print(f"  {burst} at once: done", file=sys.stderr)
    finally:
        await replica.jobs.shut_down()
    return {
        "sequential": {
            "started": percentiles([s for s, _ in sequential]),
            "heard": percentiles([h for _, h in sequential]),
        },
        f"burst_of_{burst}": {
            "started": percentiles([s for s, _ in together]),
            "heard": percentiles([h for _, h in together]),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--burst", type=int, default=100)
    options = parser.parse_args()
    report: dict[str, Any] = {}
    with redis_server() as url:
        report["redis"] = measure(url, lambda: RedisJobStore.from_url(url), options.jobs, options.burst)
    path = Path(tempfile.mkdtemp()) / "store.db"
    report["sqlite"] = measure(f"sqlite:///{path}", lambda: SqliteJobStore(path), options.jobs, options.burst)
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
