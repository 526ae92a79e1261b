"""The bulk gift analysis on a big CSV, on the embedded (SQLite) store: time, events,
what the job costs everyone else, and what it writes.

Starts `giftgenius serve` over HTTP with a fresh SQLite file, runs the job through the
herald client, and reports:

- the wall time from the call to the final event, and how many events arrived;
- how late progress reached the listener: receipt time minus the event's `timestamp`,
  which the server sets when the job reports it;
- `ping` round trips on another session while the job runs (p50, p99), against the same
  pings before it, idle;
- the bytes the server process wrote to disk during the job (Linux's `write_bytes`: the
  SQLite file, its WAL and checkpoints), against the CSV's size.

  python bench/bulk_job.py [--rows 20000]

Run it with `PYTHONPATH=<an older checkout>/src` to measure the code before a change.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from herald.client import connect_http
from herald.testing import free_port, wait_until_listening

INTERESTS = [
    "hiking",
    "coffee",
    "board games",
    "reading",
    "tea",
    "yoga",
    "music",
    "cooking",
    "gardening",
    "travel",
]


def employees(rows: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["name", "department", "interests", "budget"])
    for n in range(rows):
        picked = ";".join(INTERESTS[(n * k) % len(INTERESTS)] for k in (1, 3, 7)[: 1 + n % 3])
        writer.writerow([f"Employee {n}", f"Team {n % 12}", picked, 25 + (n * 7) % 90])
    return out.getvalue()


def written_bytes(pid: int) -> int:
    """What the process has written to storage so far (Linux)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    raise RuntimeError("no write_bytes in /proc/PID/io")


async def pings(url: str, until: asyncio.Event, seconds: float | None = None) -> list[float]:
    """Round trips of `ping` every 10 ms until `until` is set (or for `seconds`)."""
    times: list[float] = []
    async with connect_http(url) as client:
        deadline = None if seconds is None else time.perf_counter() + seconds
        while not until.is_set() and (deadline is None or time.perf_counter() < deadline):
            began = time.perf_counter()
            await client.request("ping")
            times.append(time.perf_counter() - began)
            await asyncio.sleep(0.01)
    return times


def quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Found:
    seconds: float
    progress: int
    total: int
    final: str
    late: list[float]
    idle: list[float]
    busy: list[float]
    written: int


async def run(url: str, csv_text: str, pid: int) -> Found:
    idle = await pings(url, asyncio.Event(), seconds=2)
    ended = asyncio.Event()
    busy = asyncio.ensure_future(pings(url, ended))
    async with connect_http(url) as client:
        before = written_bytes(pid)
        started_at = time.perf_counter()
        started = await client.call_tool("start_bulk_gift_analysis", {"csv": csv_text})
        job_id = started["structuredContent"]["jobId"]
        progress = total = 0
        final = "lost"
        late: list[float] = []
        async for event in client.job_events(job_id):
            stamped = datetime.fromisoformat(event.timestamp.replace("Z", "+00:00")).timestamp()
            late.append(max(0.0, time.time() - stamped))
            total += 1
            progress += event.kind == "progress"
            final = event.kind
        seconds = time.perf_counter() - started_at
        ended.set()
        written = written_bytes(pid) - before
    return Found(seconds, progress, total, final, late, idle, await busy, written)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    port = free_port()
    csv_text = employees(args.rows)
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store.db"
        argv = [
            sys.executable,
            "-m",
            "giftgenius",
            "serve",
            "--port",
            str(port),
            "--store",
            f"sqlite:///{store}",
            "--quiet",
        ]
        server = subprocess.Popen(argv)
        try:
            wait_until_listening(port, server, timeout=30)
            found = asyncio.run(run(f"http://127.0.0.1:{port}/mcp", csv_text, server.pid))
        finally:
            server.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=10)
            server.kill()
    seconds, late, idle, busy = found.seconds, found.late, found.idle, found.busy
    size = len(csv_text.encode())
    written = found.written
    print(f"{args.rows} rows ({size / 1e6:.2f} MB): job {found.final} in {seconds:.2f} s")
    print(f"{found.total} events, {found.progress} of them progress")
    worst, median = max(late), statistics.median(late)
    print(f"progress reached the listener at most {worst:.2f} s late (median {median:.3f} s)")
    print(
        f"ping idle p50 {quantile(idle, 0.5) * 1e3:.1f} ms p99 {quantile(idle, 0.99) * 1e3:.1f} ms; "
        f"during the job p50 {quantile(busy, 0.5) * 1e3:.1f} ms p99 {quantile(busy, 0.99) * 1e3:.1f} ms "
        f"({len(busy)} pings)"
    )
    print(f"written to disk during the job: {written / 1e6:.1f} MB, {written / size:.1f}x the CSV")
    return 0 if found.final == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
