"""What idle `subscriptions/listen` streams cost the jobs that do run.

A real `giftgenius serve` (in-memory store, uvloop) runs `--jobs` bulk analyses (about
200 events each), first with no other client, then with `--idle` 2026-07-28 listens
open, each naming one job that never runs and never reading. The rounds alternate
(none, idle, none, idle, ...) so the machine's drift hits both alike. A round runs from
the first job's start to the client hearing the last one complete on a listen of its own.

A job event should cost the listens that follow its job, not every open listen: the
ratio idle ÷ none is the cost of the idle ones, ideally 1.

  python bench/idle_listens.py [--idle 800] [--jobs 60] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from herald.protocol.sse import SSEDecoder
from herald.testing import free_port, wait_until_listening

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
}
#: Rows per bulk analysis: little matching work, so the job events are what the jobs cost.
ROWS = 20
#: A round that takes longer than this is stuck.
ROUND_SECONDS = 300


def csv(rows: int) -> str:
    lines = ["name,department,interests,budget"]
    lines += [f"Person {n},Dept {n % 7},hiking;coffee,{20 + n % 80}" for n in range(rows)]
    return "\n".join(lines) + "\n"


@contextmanager
def giftgenius(store: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    argv = [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--port", str(port), "--store", store]
    process = subprocess.Popen([*argv, "--max-jobs-per-client", "0"])
    try:
        wait_until_listening(port, process)
        yield process, port
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def idle_listens(port: int, count: int) -> Iterator[None]:
    """`count` listens, each naming a job that never runs, that never read their stream."""
    sockets = []
    try:
        for _ in range(count):
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "subscriptions/listen",
                    "params": {
                        "notifications": {"io.herald/jobEvents": {"jobIds": [secrets.token_hex(16)]}},
                        "_meta": META,
                    },
                }
            ).encode()
            head = {**HEADERS, "mcp-method": "subscriptions/listen", "host": f"127.0.0.1:{port}"}
            head["content-length"] = str(len(body))
            request = b"POST /mcp HTTP/1.1\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in head.items())
            connection = socket.create_connection(("127.0.0.1", port))
            sockets.append(connection)
            connection.sendall(request + b"\r\n" + body)
        for connection in sockets:  # each has its acknowledgement: the listen is open
            connection.settimeout(30)
            received = b""
            while b"acknowledged" not in received:
                if not (chunk := connection.recv(65536)):
                    raise SystemExit("idle_listens: a listen ended before its acknowledgement")
                received += chunk
        yield
    finally:
        for connection in sockets:
            connection.close()


@dataclass(frozen=True)
class Round:
    seconds: float
    server_cpu_seconds: float
    events: int


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time a process has used so far (10 ms resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_round(url: str, pid: int, jobs: int) -> Round:
    """From before the first job starts to the client hearing the last one complete: the
    seconds, the server's CPU seconds, and the events heard.

    The client hears them on one listen that names every job (its history first, then
    what is live), the same in every round.
    """
    call = {"name": "start_bulk_gift_analysis", "arguments": {"csv": csv(ROWS)}, "_meta": META}
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "start_bulk_gift_analysis"}
    ids: list[str] = []
    async with httpx.AsyncClient(timeout=ROUND_SECONDS) as client, asyncio.timeout(ROUND_SECONDS):
        started = time.perf_counter()
        cpu_before = cpu_seconds(pid)
        events = 0
        for number in range(jobs):
            body = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": call}
            answer = (await client.post(url, json=body, headers=headers)).json()
            ids.append(answer["result"]["structuredContent"]["jobId"])
        notifications = {"io.herald/jobEvents": {"jobIds": ids}}
        listen = {"jsonrpc": "2.0", "id": 0, "method": "subscriptions/listen"}
        listen["params"] = {"notifications": notifications, "_meta": META}
        listen_headers = {**HEADERS, "mcp-method": "subscriptions/listen"}
        ended: set[str] = set()
        decoder = SSEDecoder()
        async with client.stream("POST", url, json=listen, headers=listen_headers) as stream:
            async for chunk in stream.aiter_bytes():
                for event in decoder.feed(chunk):
                    events += 1
                    params = json.loads(event.data).get("params", {}) if event.data else {}
                    if params.get("type") in ("job.completed", "job.failed", "job.cancelled"):
                        if params["type"] != "job.completed":
                            raise SystemExit(f"idle_listens: a job ended {params['type']}")
                        ended.add(params["jobId"])
                if len(ended) == jobs:
                    return Round(time.perf_counter() - started, cpu_seconds(pid) - cpu_before, events)
    raise SystemExit("idle_listens: the listen ended before every job did")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--idle", type=int, default=800)
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds: dict[str, list[Round]] = {"none": [], "idle": []}
    with giftgenius("memory") as (process, port):
        url = f"http://127.0.0.1:{port}/mcp"
        asyncio.run(one_round(url, process.pid, args.jobs))  # warm-up, not counted
        for _ in range(args.rounds):
            rounds["none"].append(asyncio.run(one_round(url, process.pid, args.jobs)))
            with idle_listens(port, args.idle):
                rounds["idle"].append(asyncio.run(one_round(url, process.pid, args.jobs)))
    report: dict[str, object] = {"jobs": args.jobs, "idle_listens": args.idle}
    report["events_per_round"] = rounds["none"][0].events
    for measure in ("seconds", "server_cpu_seconds"):
        without = [getattr(each, measure) for each in rounds["none"]]
        with_idle = [getattr(each, measure) for each in rounds["idle"]]
        ratios = [idle / none for none, idle in zip(without, with_idle, strict=True)]
        report[measure] = {
            "without": [round(value, 2) for value in without],
            "with_idle": [round(value, 2) for value in with_idle],
            "ratio_median": round(statistics.median(ratios), 2),
            "ratio_min_max": [round(min(ratios), 2), round(max(ratios), 2)],
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"idle_listens: {time.monotonic() - started:.0f} s", file=sys.stderr)
    sys.exit(code)
