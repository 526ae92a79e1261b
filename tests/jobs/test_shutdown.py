"""A server that stops on purpose costs no work a crash would not; it never cancels a job.

Only `cancel_job` or `tasks/cancel` is a cancellation. At a clean stop (SIGTERM, the end of
stdin, `Server.stop_jobs`) a resumable job is handed back at once: its progress is stored,
one event says it waits for a worker, and the next worker (or this server, started again)
goes on from its checkpoint. A job that cannot go on elsewhere gets the shutdown grace to
finish; one still running after it ends `failed` with code `interrupted` and a hint saying
it can be started again, with exactly one ending.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from giftgenius.app import build_server
from herald import Server
from herald.jobs.events import TERMINAL_KINDS
from herald.jobs.service import HANDED_BACK, RESUMED
from herald.runtime import JobContext
from herald.runtime.runner import SHUTTING_DOWN
from herald.stores.memory import MemoryJobStore
from herald.stores.sqlite import SqliteJobStore
from herald.testing import connect
from tests.modern import result, structured
from tests.servers import giftgenius_http, job_store, running_past


def blocking_server(store: SqliteJobStore, running: asyncio.Event) -> Server:
    server = Server("shutdown")
    server.use_job_store(store)

    @server.job()
    async def forever(ctx: JobContext) -> dict[str, Any]:
        """Reports once, then waits for a stop that only the server can bring."""
        await ctx.report_progress(10, "waiting")
        running.set()
        await asyncio.Event().wait()
        return {}

    return server


async def test_a_job_still_running_after_the_grace_is_interrupted(tmp_path: Path) -> None:
    running = asyncio.Event()
    server = blocking_server(SqliteJobStore(tmp_path / "jobs.db"), running)
    async with connect(server) as client:
        job_id = (await client.call_tool("forever"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await running.wait()
        await server.jobs.shut_down(grace=0.2)
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    try:
        job = await reopened.get(job_id)
        assert job is not None
        assert job.status == "failed"
        assert job.error == {
            "code": "interrupted",
            "message": SHUTTING_DOWN,
            "hint": "Start the job again; its earlier events stay available.",
        }
        kinds = [event.kind for event in await reopened.events_after(job_id)]
        assert kinds == ["created", "started", "progress", "failed"]
        assert await reopened.unfinished() == [], "nothing is left for the next start to recover"
    finally:
        await reopened.aclose()


def finishing_server(store: SqliteJobStore, running: asyncio.Event, finish: asyncio.Event) -> Server:
    server = Server("shutdown", job_shutdown_grace_seconds=60)
    server.use_job_store(store)

    @server.job()
    async def almost_done(ctx: JobContext) -> dict[str, Any]:
        """Runs until told to finish: a job that cannot go on elsewhere."""
        await ctx.report_progress(90, "finishing")
        running.set()
        await finish.wait()
        return {"finished": True}

    return server


async def run_until_the_stop_waits(
    tmp_path: Path, finish: asyncio.Event
) -> tuple[Server, str, asyncio.Task[None]]:
    """Start `almost_done`, and once it runs, begin the server's stop: the server, the job, the stop."""
    running = asyncio.Event()
    server = finishing_server(SqliteJobStore(tmp_path / "jobs.db"), running, finish)
    async with connect(server) as client:
        job_id = (await client.call_tool("almost_done"))["structuredContent"]["jobId"]
    async with asyncio.timeout(10):
        await running.wait()
    stopping = asyncio.ensure_future(server.jobs.shut_down())
    await asyncio.sleep(0.05)  # a turn for the stop to reach its wait, which is what is checked
    assert not stopping.done(), "the stop waits for the job"
    assert not server.jobs.runner.accepting, "while it waits, no new job is taken"
    return server, job_id, stopping


async def stored_kinds(path: Path, job_id: str) -> list[str]:
    reopened = SqliteJobStore(path)
    try:
        return [event.kind for event in await reopened.events_after(job_id)]
    finally:
        await reopened.aclose()


async def test_a_job_that_cannot_be_handed_on_may_finish_within_the_grace(tmp_path: Path) -> None:
    finish = asyncio.Event()
    _, job_id, stopping = await run_until_the_stop_waits(tmp_path, finish)
    finish.set()
    async with asyncio.timeout(10):
        await stopping
    assert await stored_kinds(tmp_path / "jobs.db", job_id) == ["created", "started", "progress", "completed"]


async def test_a_second_signal_ends_the_grace(tmp_path: Path) -> None:
    server, job_id, stopping = await run_until_the_stop_waits(tmp_path, asyncio.Event())
    server.jobs.runner.end_grace()
    async with asyncio.timeout(10):
        await stopping
    assert await stored_kinds(tmp_path / "jobs.db", job_id) == ["created", "started", "progress", "failed"]


def resumable_server(
    store: SqliteJobStore | MemoryJobStore, running: asyncio.Event, seen: list[Any]
) -> Server:
    server = Server("shutdown", job_shutdown_grace_seconds=60)
    server.use_job_store(store)

    @server.job(resumable=True)
    async def counted(ctx: JobContext) -> dict[str, Any]:
        """Keeps its place at 40%, then waits for a stop; resumed, it finishes."""
        seen.append(ctx.resume_state)
        if ctx.resume_state is not None:
            await ctx.report_progress(100, "done")
            return {"resumedFrom": ctx.resume_state}
        await ctx.report_progress(40, "counting")
        await ctx.checkpoint({"done": 40})
        running.set()
        await asyncio.Event().wait()
        return {}

    return server


async def test_a_resumable_job_is_handed_back_at_once_and_goes_on_at_the_next_start(tmp_path: Path) -> None:
    running = asyncio.Event()
    seen: list[Any] = []
    server = resumable_server(SqliteJobStore(tmp_path / "jobs.db"), running, seen)
    async with connect(server) as client:
        job_id = (await client.call_tool("counted"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await running.wait()
        async with asyncio.timeout(10):  # not the 60 s grace: nothing is lost by stopping it now
            await server.jobs.shut_down()
    store = SqliteJobStore(tmp_path / "jobs.db")
    job = await store.get(job_id)
    assert job is not None
    assert (job.status, job.worker, job.percentage, job.stage) == ("running", None, 40.0, HANDED_BACK)
    assert [event.kind for event in await store.events_after(job_id)] == [
        "created",
        "started",
        "progress",
        "progress",
    ]
    restarted, ended = resumable_server(store, asyncio.Event(), seen), asyncio.Event()
    restarted.jobs.service.add_listener(lambda job, event: ended.set() if job.terminal else None)
    await restarted.jobs.start_up()
    try:
        async with asyncio.timeout(10):
            await ended.wait()
    finally:
        await restarted.jobs.shut_down()
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    try:
        events = await reopened.events_after(job_id)
        assert [event.kind for event in events][-1] == "completed"
        assert [event.payload.get("stage") for event in events if event.kind == "progress"] == [
            "counting",
            HANDED_BACK,
            RESUMED,
            "done",
        ]
        assert seen == [None, {"done": 40}], "the next run went on from the checkpoint"
    finally:
        await reopened.aclose()


async def test_on_a_store_that_ends_with_the_process_nothing_is_handed_back() -> None:
    running = asyncio.Event()
    seen: list[Any] = []
    store = MemoryJobStore()
    server = resumable_server(store, running, seen)
    async with connect(server) as client:
        job_id = (await client.call_tool("counted"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await running.wait()
        await server.jobs.shut_down(grace=0.1)
        job = await store.get(job_id)
        assert job is not None
        assert job.error is not None
        assert job.error["code"] == "interrupted", "no other worker could ever take it up"


async def test_an_explicit_cancel_is_still_a_cancellation(tmp_path: Path) -> None:
    running = asyncio.Event()
    server = blocking_server(SqliteJobStore(tmp_path / "jobs.db"), running)
    async with connect(server) as client:
        job_id = (await client.call_tool("forever"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await running.wait()
        await client.call_tool("cancel_job", {"jobId": job_id})
        await server.jobs.shut_down()  # waits for the job to record its ending, whatever it is
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    try:
        events = await reopened.events_after(job_id)
        assert [event.kind for event in events][-1] == "cancelled"
        assert events[-1].payload["reason"] == "cancelled on request"
        assert sum(event.kind in TERMINAL_KINDS for event in events) == 1
    finally:
        await reopened.aclose()


def result_documents(url: str, job_id: str) -> dict[str, str]:
    """The job's result documents (JSON and CSV) as a client reads them, by SHA-256."""
    found = {}
    for name in ("result.json", "result.csv"):
        uri = f"herald://jobs/{job_id}/{name}"
        text = result(url, "resources/read", {"uri": uri}, uri)["contents"][0]["text"]
        found[name] = hashlib.sha256(text.encode()).hexdigest()
    return found


def everyone_matched_alone(rows: int) -> str:
    """A CSV whose people share no ranking and no reading of their interests (each has
    interests and a budget of their own): matching, the stage a resumed run goes on from,
    costs milliseconds per person."""
    lines = ["name,department,interests,budget"]
    lines += [f"Person {n},Dept {n % 7},hiking;tea;club {n},{20 + n / 100:.2f}" for n in range(rows)]
    return "\n".join(lines) + "\n"


async def uninterrupted_result(csv: str) -> dict[str, str]:
    """What the bulk analysis of `csv` gives when nothing stops it, by SHA-256."""
    server = build_server()
    async with connect(server) as client:
        job_id = (await client.call_tool("start_bulk_gift_analysis", {"csv": csv}))["structuredContent"][
            "jobId"
        ]
        await server.jobs.runner.wait_ended(job_id)
        found = {}
        for name in ("result.json", "result.csv"):
            read = await client.request("resources/read", {"uri": f"herald://jobs/{job_id}/{name}"})
            found[name] = hashlib.sha256(read["contents"][0]["text"].encode()).hexdigest()
    return found


def until_ended(url: str, job_id: str, seconds: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (status := structured(url, "get_job_status", {"jobId": job_id}))["pollAfterMs"] is not None:
        assert time.monotonic() < deadline, f"job {job_id} did not end: {status['status']} {status['stage']}"
        time.sleep(0.1)
    return status


@pytest.mark.slow
async def test_sigterm_hands_a_bulk_job_to_the_next_start_which_ends_it_as_if_never_stopped(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    csv = everyone_matched_alone(3_000)
    expected = await uninterrupted_result(csv)
    with giftgenius_http(store, measured=False) as served:
        job_id = structured(served.url, "start_bulk_gift_analysis", {"csv": csv})["jobId"]
        # A few percent into matching, which takes seconds here: the stop lands mid-job.
        assert await running_past(store, job_id, 45) is not None, "the job ended before SIGTERM"
        served.process.send_signal(signal.SIGTERM)
        # uvicorn ends by the signal it was sent once it has shut down cleanly.
        assert served.process.wait(timeout=30) in (0, -signal.SIGTERM)
    async with job_store(store) as jobs:
        job = await jobs.get(job_id)
        assert job is not None
        assert (job.status, job.worker, job.stage) == ("running", None, HANDED_BACK), (
            "handed back, not failed"
        )
    with giftgenius_http(store, measured=False) as served:
        ended = until_ended(served.url, job_id)
        assert ended["status"] == "completed", ended.get("error")
        assert result_documents(served.url, job_id) == expected, "the same result as a run never stopped"
    kinds = [event["type"].removeprefix("job.") for event in ended["events"]]
    assert [kind for kind in kinds if kind in TERMINAL_KINDS] == ["completed"], kinds
    stages = [event.get("stage") for event in ended["events"] if event["type"] == "job.progress"]
    assert stages.index(HANDED_BACK) < stages.index(RESUMED)
