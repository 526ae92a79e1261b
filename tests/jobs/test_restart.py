"""Servers on one SQLite file (real processes): killed mid-job, started again, side by side.

Each server is a worker with a lease (one second here, so the tests need not wait long):
the jobs of a live worker are never touched, and those of a killed one are failed once,
after its lease has lapsed, by whichever server sweeps first.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest

from herald.jobs.events import all_schemas
from herald.testing import free_port, wait_until_listening
from tests.modern import call_tool, result, structured

pytestmark = pytest.mark.slow  # server processes stopped and started again

SERVER = '''
import asyncio, sys
from herald import Server
from herald.runtime import JobContext
from herald.stores.sqlite import SqliteJobStore
from herald.transports.http import run_http

grace = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
server = Server("restart", job_lease_seconds=1.0, job_shutdown_grace_seconds=grace)
server.use_job_store(SqliteJobStore(sys.argv[1]))

@server.job()
async def slow(steps: int, ctx: JobContext) -> dict:
    """Takes a while: one step every 20 ms."""
    for step in range(1, steps + 1):
        await ctx.report_progress(100 * step / steps, f"step {step}")
        await asyncio.sleep(0.02)
    return {"steps": steps}

@server.job(resumable=True)
async def counted(steps: int, ctx: JobContext) -> dict:
    """Counts to `steps`, one every 20 ms, keeping its place every 10 steps."""
    first = (ctx.resume_state or {}).get("done", 0) + 1
    for step in range(first, steps + 1):
        await ctx.report_progress(100 * step / steps, f"step {step}")
        if step % 10 == 0:
            await ctx.checkpoint({"done": step})
        await asyncio.sleep(0.02)
    return {"steps": steps, "resumedAfter": first - 1}

run_http(server, port=int(sys.argv[2]))
'''


@contextmanager
def running_server(
    script: Path, database: Path, stderr: Path | None = None, grace: float = 1.0
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    errors = stderr.open("wb") if stderr is not None else None
    argv = [sys.executable, str(script), str(database), str(port), str(grace)]
    process = subprocess.Popen(argv, stderr=errors)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_listening(port, process)
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        if errors is not None:
            errors.close()


def read_json(url: str, uri: str) -> Any:
    return orjson.loads(result(url, "resources/read", {"uri": uri}, uri)["contents"][0]["text"])


def until_ended(url: str, job_id: str, seconds: float = 30) -> dict[str, Any]:
    """The job's status once it has ended (bounded: a job that never ends fails the test)."""
    deadline = time.monotonic() + seconds
    while (status := structured(url, "get_job_status", {"jobId": job_id}))["status"] in (
        "pending",
        "running",
    ):
        assert time.monotonic() < deadline, f"job {job_id} did not end"
        time.sleep(0.1)
    return status


def until_progressed(url: str, job_id: str, events: int = 3) -> dict[str, Any]:
    """The job's status once it has reported `events` progress events (bounded)."""
    deadline = time.monotonic() + 20
    while True:
        found = structured(url, "get_job_status", {"jobId": job_id})
        if sum(event["type"] == "job.progress" for event in found["events"]) >= events:
            return found
        assert time.monotonic() < deadline, "the job made no progress"
        time.sleep(0.05)


def test_a_second_server_on_the_file_leaves_a_live_servers_jobs_alone(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    database = tmp_path / "jobs.db"
    logs = tmp_path / "first.log", tmp_path / "second.log"
    with running_server(script, database, logs[0]) as (_, first):
        job_id = structured(first, "slow", {"steps": 400})["jobId"]
        until_progressed(first, job_id)
        with running_server(script, database, logs[1]) as (_, second):
            seen_by_second = structured(second, "get_job_status", {"jobId": job_id})
            assert seen_by_second["status"] == "running", "the second server did not take the job"
            ended = until_ended(second, job_id)
    assert ended["status"] == "completed", ended.get("error")
    kinds = [event["type"] for event in ended["events"]]
    assert kinds.count("job.completed") == 1
    assert "job.failed" not in kinds
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text, text
        assert "IllegalTransition" not in text, text


def test_a_job_cancelled_on_another_server_ends_once(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    database = tmp_path / "jobs.db"
    with running_server(script, database) as (_, first), running_server(script, database) as (_, second):
        job_id = structured(first, "slow", {"steps": 10_000})["jobId"]
        until_progressed(first, job_id)
        cancelled = call_tool(second, "cancel_job", {"jobId": job_id})
        assert "is being cancelled" in cancelled["content"][0]["text"], cancelled
        assert structured(first, "get_job_status", {"jobId": job_id})["status"] == "cancelled"
        progressed = len(structured(first, "get_job_status", {"jobId": job_id})["events"])
        # The worker learns of it on its next write (every 20 ms): over half a second, a
        # worker that went on would have recorded progress after the end.
        for _ in range(10):
            time.sleep(0.05)
            final = structured(first, "get_job_status", {"jobId": job_id})
            assert len(final["events"]) == progressed, final["events"][progressed:]
    assert final["status"] == "cancelled"
    assert final["events"][-1]["type"] == "job.cancelled"
    assert len(final["events"]) == progressed
    assert [event["type"] for event in final["events"]].count("job.cancelled") == 1


@contextmanager
def one_killed_mid_job(
    tmp_path: Path, tool: str, arguments: dict[str, Any], events: int = 3
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Two servers on one file; `tool` starts on one, killed (SIGKILL) once the job reported
    `events` progress events. Yields the survivor's URL, the job's id and its status then."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    database = tmp_path / "jobs.db"
    with running_server(script, database) as (_, survivor):
        with running_server(script, database) as (first, doomed):
            job_id = structured(doomed, tool, arguments)["jobId"]
            before = until_progressed(doomed, job_id, events=events)
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        yield survivor, job_id, before


def test_a_killed_servers_job_is_failed_once_by_the_server_still_running(tmp_path: Path) -> None:
    with one_killed_mid_job(tmp_path, "slow", {"steps": 10_000}) as (survivor, job_id, _):
        after = until_ended(survivor, job_id)
    assert after["status"] == "failed"
    assert after["error"]["code"] == "interrupted"
    assert [event["type"] for event in after["events"]].count("job.failed") == 1


def test_a_killed_servers_resumable_job_goes_on_from_its_checkpoint_on_the_other(tmp_path: Path) -> None:
    with one_killed_mid_job(tmp_path, "counted", {"steps": 200}, events=25) as (survivor, job_id, before):
        after = until_ended(survivor, job_id)
        answer = call_tool(survivor, "get_job_status", {"jobId": job_id})
        document = read_json(survivor, after["resultResourceId"])
    assert after["status"] == "completed", after.get("error")
    checkpointed = int(before["events"][-1]["stage"].split()[-1]) // 10 * 10
    assert document["resumedAfter"] >= checkpointed >= 10, "it went on from its last checkpoint"
    events = after["events"]
    assert events[: len(before["events"])] == before["events"], "what was seen before stays"
    kinds = [event["type"] for event in events]
    assert kinds.count("job.started") == 1
    assert kinds.count("job.completed") == 1
    assert "job.failed" not in kinds
    assert len({event["eventId"] for event in events}) == len(events)
    progress = [event["percentage"] for event in events if event["type"] == "job.progress"]
    assert progress == sorted(progress), "progress never goes back"
    stages = [event.get("stage") for event in events if event["type"] == "job.progress"]
    assert "resumed after its worker stopped" in stages
    assert answer["structuredContent"]["status"] == "completed"
    sequences = [int(event["eventId"].rpartition(":")[2]) for event in events]
    assert sequences == list(range(1, len(events) + 1)), "one sequence, no gaps, no repeats"
    # It went on from a checkpoint (every 10 steps), not from the start: the survivor
    # reported only what the killed worker had not.
    assert stages.index("resumed after its worker stopped") >= 25


def test_killed_job_is_failed_as_interrupted_and_its_events_replay(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    database = tmp_path / "jobs.db"
    with running_server(script, database) as (first, url):
        job_id = structured(url, "slow", {"steps": 10_000})["jobId"]
        deadline = time.monotonic() + 20
        while True:
            before = structured(url, "get_job_status", {"jobId": job_id})
            if sum(event["type"] == "job.progress" for event in before["events"]) >= 3:
                break
            assert time.monotonic() < deadline, "the job made no progress"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    with running_server(script, database) as (_, url):
        # The killed worker's lease lapses within a second; the next sweep fails its job.
        after = until_ended(url, job_id)
        assert after["status"] == "failed"
        assert after["error"]["code"] == "interrupted"
        assert after["pollAfterMs"] is None, "the job does not stay running forever"
        # Every event seen before the kill is still there, unchanged, with the same id.
        assert after["events"][: len(before["events"])] == before["events"]
        ids = [event["eventId"] for event in after["events"]]
        assert len(ids) == len(set(ids))
        assert after["events"][-1]["type"] == "job.failed"
        # A client that saw `before` continues from its cursor and gets the rest exactly once.
        rest = structured(url, "get_job_status", {"jobId": job_id, "cursor": before["nextCursor"]})
        assert before["events"] + rest["events"] == after["events"]
        validators = {name: jsonschema_rs.validator_for(schema) for name, schema in all_schemas().items()}
        for event in after["events"]:
            validators[event["type"]].validate(event)


def test_sigterm_lets_a_job_that_cannot_go_on_elsewhere_finish(tmp_path: Path) -> None:
    """`slow` is not resumable: SIGTERM gives it the grace (30 s here) to end on its own."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    database = tmp_path / "jobs.db"
    with running_server(script, database, grace=30) as (process, url):
        job_id = structured(url, "slow", {"steps": 100})["jobId"]
        until_progressed(url, job_id)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    with running_server(script, database) as (_, url):
        after = structured(url, "get_job_status", {"jobId": job_id})
    assert after["status"] == "completed", after.get("error")
    assert [event["type"] for event in after["events"]][-1] == "job.completed"
