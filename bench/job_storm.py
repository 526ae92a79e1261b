"""1,000 jobs started at once: does every other request still get through?

Starts `giftgenius serve` over HTTP on a fresh SQLite file, measures `ping` round trips
on one session while it is idle, then again while another session starts `--jobs` bulk
analyses (a small CSV each) all at once and the jobs run. Admission keeps only a few
jobs running at a time, so pings should stay fast: the report gives ping p50/p99 idle
and under the storm, how long the starts took to be answered, and how long until every
job had ended. Bounded: it stops once every job has ended or after `--max-seconds`.

  python bench/job_storm.py [--jobs 1000] [--max-seconds 300]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from herald.client import connect_http
from herald.testing import free_port, wait_until_listening

CSV = "name,department,interests,budget\nAda,Eng,hiking;coffee,40\nGrace,Ops,tea,30\n"
PING_EVERY = 0.01


async def pings(url: str, stop: asyncio.Event) -> list[float]:
    """Round trips of `ping` on a session of its own until `stop` is set, in milliseconds."""
    times: list[float] = []
    async with connect_http(url, listen=False) as client:
        while not stop.is_set():
            started = time.perf_counter()
            await client.request("ping")
            times.append((time.perf_counter() - started) * 1000)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), PING_EVERY)
    return times


def quantiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "count": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max_ms": round(ordered[-1], 2),
    }


async def start_and_follow(url: str, jobs: int, max_seconds: float) -> tuple[float, int, float]:
    """Start `jobs` jobs at once on one session; (starts answered after, jobs ended, all ended after)."""
    async with (
        httpx.AsyncClient(timeout=max_seconds, limits=httpx.Limits(max_connections=64)) as http,
        connect_http(url, http=http, listen=False) as client,
    ):
        started_at = time.perf_counter()
        started = await asyncio.gather(
            *(client.call_tool("start_bulk_gift_analysis", {"csv": CSV}) for _ in range(jobs))
        )
        answered_after = time.perf_counter() - started_at
        deadline = started_at + max_seconds
        ended = 0
        for result in started:
            job_id = result["structuredContent"]["jobId"]
            while time.perf_counter() < deadline:
                status = await client.call_tool("get_job_status", {"jobId": job_id})
                if status["structuredContent"]["status"] in ("completed", "failed", "cancelled"):
                    ended += 1
                    break
                await asyncio.sleep(0.05)
        return answered_after, ended, time.perf_counter() - started_at


async def storm(url: str, jobs: int, max_seconds: float) -> dict[str, object]:
    idle_stop = asyncio.Event()
    async with asyncio.TaskGroup() as tasks:
        idle = tasks.create_task(pings(url, idle_stop))
        await asyncio.sleep(2)
        idle_stop.set()
    idle_times = idle.result()

    busy_stop = asyncio.Event()
    async with asyncio.TaskGroup() as tasks:
        busy = tasks.create_task(pings(url, busy_stop))
        try:
            answered_after, ended, all_ended_after = await start_and_follow(url, jobs, max_seconds)
        finally:
            busy_stop.set()
    busy_times = busy.result()
    return {
        "jobs": jobs,
        "starts_answered_s": round(answered_after, 2),
        "jobs_ended": ended,
        "all_ended_s": round(all_ended_after, 2),
        "ping_idle": quantiles(idle_times),
        "ping_during_storm": quantiles(busy_times),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=300)
    parser.add_argument("--server-arg", action="append", default=[], help="extra `serve` argument")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "jobs.db"
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "giftgenius",
                "serve",
                "--port",
                str(port),
                "--store",
                f"sqlite:///{store}",
                "--max-jobs-per-client",
                "0",  # one session starts them all
                "--max-waiting-jobs",
                "0",  # and all wait at once
                *args.server_arg,
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            wait_until_listening(port, server)
            report = asyncio.run(storm(f"http://127.0.0.1:{port}/mcp", args.jobs, args.max_seconds))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps(report, indent=2))
    return 0 if report["jobs_ended"] == args.jobs else 1


if __name__ == "__main__":
    sys.exit(main())
