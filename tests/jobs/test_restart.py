"""A server killed mid-job and started again on the same SQLite file (real processes)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs

from herald.jobs.events import all_schemas
from herald.testing import free_port, wait_until_listening

SERVER = '''
import asyncio, sys
from herald import Server
from herald.runtime import JobContext
from herald.stores.sqlite import SqliteJobStore
from herald.transports.http import run_http

server = Server("restart")
server.use_job_store(SqliteJobStore(sys.argv[1]))

@server.job()
async def slow(steps: int, ctx: JobContext) -> dict:
    """Takes a while: one step every 20 ms."""
    for step in range(1, steps + 1):
        await ctx.report_progress(100 * step / steps, f"step {step}")
        await asyncio.sleep(0.02)
    return {"steps": steps}

run_http(server, port=int(sys.argv[2]))
'''
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@contextmanager
def running_server(script: Path, database: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(script), str(database), str(port)])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_listening(port, process)
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


def call(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    response = httpx.post(url, json=body, headers=headers, timeout=10)
    result: dict[str, Any] = response.json()["result"]["structuredContent"]
    return result


def test_killed_job_is_failed_as_interrupted_and_its_events_replay(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    database = tmp_path / "jobs.db"
    with running_server(script, database) as (first, url):
        job_id = call(url, "slow", {"steps": 10_000})["jobId"]
        deadline = time.monotonic() + 20
        while True:
            before = call(url, "get_job_status", {"jobId": job_id})
            if sum(event["type"] == "job.progress" for event in before["events"]) >= 3:
                break
            assert time.monotonic() < deadline, "the job made no progress"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    with running_server(script, database) as (_, url):
        after = call(url, "get_job_status", {"jobId": job_id})
        assert after["status"] == "failed"
        assert after["error"]["code"] == "interrupted"
        assert after["pollAfterMs"] is None, "the job does not stay running forever"
        # Every event seen before the kill is still there, unchanged, with the same id.
        assert after["events"][: len(before["events"])] == before["events"]
        ids = [event["eventId"] for event in after["events"]]
        assert len(ids) == len(set(ids))
        assert after["events"][-1]["type"] == "job.failed"
        # A client that saw `before` continues from its cursor and gets the rest exactly once.
        rest = call(url, "get_job_status", {"jobId": job_id, "cursor": before["nextCursor"]})
        assert before["events"] + rest["events"] == after["events"]
        validators = {name: jsonschema_rs.validator_for(schema) for name, schema in all_schemas().items()}
        for event in after["events"]:
            validators[event["type"]].validate(event)
