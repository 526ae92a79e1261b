"""What an HTTP server keeps after work it has finished or that its clients abandoned.

Runs herald's Streamable HTTP app under uvicorn in this process (so its tasks can be
counted) on a free loopback port, and drives it with httpx:

* 10,000 calls in one handshake-era session, each answered over SSE (the tool reports
  progress, so the answer is a stream);
* 1,000 2026-07-28 calls that turn into SSE and are then abandoned by the client after
  the first event, while the tool is still waiting.

After each phase it reports the RSS growth over a warmed-up baseline, the tasks still
pending beyond the baseline, the SSE streams the session still holds, and the "Task was
destroyed but it is pending!" warnings asyncio logged. Exit 0 when every bound holds.

  .venv/bin/python bench/leaks.py [--calls 10000] [--abandoned 1000] [--bound-mib 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import resource
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from herald.testing import check_server  # after the path, for a plain checkout
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
MAX_SECONDS = 600  # the whole run stops by itself past this


class DestroyedTasks(logging.Handler):
    """Counts asyncio's "Task was destroyed but it is pending!" reports."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Task was destroyed" in record.getMessage():
            self.count += 1


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pending_tasks() -> int:
    return sum(1 for task in asyncio.all_tasks() if not task.done())


async def settle() -> None:
    """Let finished work run its last callbacks, then collect."""
    for _ in range(5):
        await asyncio.sleep(0.05)
    gc.collect()


async def sse_calls(client: httpx.AsyncClient, url: str, session: str, calls: int, first_id: int) -> None:
    for number in range(first_id, first_id + calls):
        body = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": number}},
        }
        response = await client.post(url, json=body, headers={**HEADERS, "mcp-session-id": session})
        if (
            not response.headers["content-type"].startswith("text/event-stream")
            or "counted 2" not in response.text
        ):
            raise RuntimeError(f"call {number} was not answered over SSE: {response.text[:200]}")


async def abandoned_calls(client: httpx.AsyncClient, url: str, calls: int) -> None:
    headers = {
        **HEADERS,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "hold",
    }
    for number in range(calls):
        body = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {
                "name": "hold",
                "arguments": {"name": "never"},  # reports once (a stream), then waits: the client leaves
                "_meta": {**META, "progressToken": number},
            },
        }
        async with client.stream("POST", url, json=body, headers=headers) as response:
            async for _ in response.aiter_bytes():
                break  # the first event arrived: leave mid-stream


async def run(calls: int, abandoned: int) -> dict[str, Any]:
    destroyed = DestroyedTasks()
    logging.getLogger("asyncio").addHandler(destroyed)
    report: dict[str, Any] = {}
    async with (
        serve_http(check_server(), HttpConfig(session_ttl=3600)) as (url, app),
        httpx.AsyncClient(timeout=30) as client,
    ):
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "leaks", "version": "1"},
            },
        }
        session_id = (await client.post(url, json=initialize, headers=HEADERS)).headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.post(url, json=initialized, headers={**HEADERS, "mcp-session-id": session_id})
        session = app.state.sessions.get(session_id)

        await sse_calls(client, url, session_id, 200, 1)  # warm-up: the allocator reaches its size
        await abandoned_calls(client, url, 20)
        await settle()
        baseline_rss, baseline_tasks = rss_mib(), pending_tasks()

        started = time.perf_counter()
        await sse_calls(client, url, session_id, calls, 1_000)
        await settle()
        report["sse_calls"] = {
            "calls": calls,
            "seconds": round(time.perf_counter() - started, 1),
            "rss_growth_mib": round(rss_mib() - baseline_rss, 2),
            "tasks_pending": pending_tasks() - baseline_tasks,
            "streams_retained": len(session.streams),
        }

        started = time.perf_counter()
        await abandoned_calls(client, url, abandoned)
        await settle()
        report["abandoned_modern_sse"] = {
            "calls": abandoned,
            "seconds": round(time.perf_counter() - started, 1),
            "rss_growth_mib": round(rss_mib() - baseline_rss, 2),
            "tasks_pending": pending_tasks() - baseline_tasks,
        }
    gc.collect()  # destroyed-but-pending tasks are reported when they are collected
    report["task_destroyed_warnings"] = destroyed.count
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--abandoned", type=int, default=1_000)
    parser.add_argument("--bound-mib", type=float, default=5.0)
    args = parser.parse_args()
    report = asyncio.run(asyncio.wait_for(run(args.calls, args.abandoned), MAX_SECONDS))
    phases = (report["sse_calls"], report["abandoned_modern_sse"])
    failures = [
        *(
            f"RSS grew {phase['rss_growth_mib']} MiB"
            for phase in phases
            if phase["rss_growth_mib"] > args.bound_mib
        ),
        *(f"{phase['tasks_pending']} tasks left pending" for phase in phases if phase["tasks_pending"] > 0),
        *(
            [f"{report['sse_calls']['streams_retained']} streams retained"]
            if report["sse_calls"]["streams_retained"]
            else []
        ),
        *(
            [f"{report['task_destroyed_warnings']} destroyed tasks"]
            if report["task_destroyed_warnings"]
            else []
        ),
    ]
    report["result"] = "pass" if not failures else "fail: " + "; ".join(failures)
    print(json.dumps(report, indent=2))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
