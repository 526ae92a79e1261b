"""The bulk gift analysis on a 10,000-row CSV, on the embedded (SQLite) store.

Starts `giftgenius serve` over HTTP with a fresh SQLite file, runs the job through the
herald client, and reports the wall time from the call to the final event, how many
progress events arrived (each one stored before it was sent) and their rate.

  python bench/bulk_job.py [--rows 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import subprocess
import sys
import tempfile
import time
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


async def run(url: str, rows: int) -> tuple[float, int, int, str]:
    async with connect_http(url) as client:
        started_at = time.perf_counter()
        started = await client.call_tool("start_bulk_gift_analysis", {"csv": employees(rows)})
        job_id = started["structuredContent"]["jobId"]
        progress = total = 0
        final = "lost"
        async for event in client.job_events(job_id):
            total += 1
            progress += event.kind == "progress"
            final = event.kind
        return time.perf_counter() - started_at, progress, total, final


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    port = free_port()
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
            seconds, progress, total, final = asyncio.run(run(f"http://127.0.0.1:{port}/mcp", args.rows))
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"{args.rows} rows: job {final} in {seconds:.2f} s")
    print(f"{total} events, {progress} of them progress; {total / seconds:.0f} events/s stored and delivered")
    ok = final == "completed" and progress >= 50
    print(f"at least 50 progress events and completed: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
