"""Plain `def` jobs: on a worker thread, reporting and checkpointing through `SyncJobContext`."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import orjson
import pytest

from herald import JobContext, JobFailure, Server, SyncJobContext
from herald.testing import InMemoryClient, connect, job_ended, job_event

RELEASE = threading.Event()


def build() -> Server:
    server = Server("sync-jobs")
    loop_thread = threading.get_ident()

    @server.job
    def tally(rows: int, ctx: SyncJobContext) -> dict[str, Any]:
        """Counts rows with blocking code, reporting as it goes."""
        for row in range(1, rows + 1):
            ctx.checkpoint({"row": row})
            ctx.report_progress(100 * row / rows, f"row {row}")
        ctx.log("info", "tallied")
        return {"rows": rows, "on_loop": threading.get_ident() == loop_thread}

    @server.job
    def spin(ctx: SyncJobContext) -> dict[str, Any]:
        """Holds its thread until cancelled, checking in at each checkpoint."""
        ctx.report_progress(5, "spinning")
        while not RELEASE.wait(0.01):
            ctx.checkpoint()
        return {}

    @server.job
    def refuses() -> dict[str, Any]:
        raise JobFailure("no_rows", "There is nothing to count.", "Send at least one row.")

    @server.job
    def saves(ctx: SyncJobContext) -> None:
        uri = ctx.save_result("report.txt", "all good", "text/plain")
        ctx.complete(uri, "saved a report")

    return server


@pytest.fixture
async def client() -> Any:
    RELEASE.clear()
    async with connect(build()) as connected:
        yield connected
    RELEASE.set()


async def status_of(client: InMemoryClient, job_id: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        await job_ended(client.server, job_id)
    return dict((await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"])


async def test_a_plain_job_runs_on_a_thread_and_reports_progress(
    client: InMemoryClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="herald.jobs")
    job_id = (await client.call_tool("tally", {"rows": 3}))["structuredContent"]["jobId"]
    status = await status_of(client, job_id)
    assert status["status"] == "completed"
    assert [e["percentage"] for e in status["events"] if e["type"] == "job.progress"] == [
        pytest.approx(100 / 3),
        pytest.approx(200 / 3),
        100,
    ]
    read = await client.request("resources/read", {"uri": status["resultResourceId"]})
    assert orjson.loads(read["contents"][0]["text"]) == {"rows": 3, "on_loop": False}
    saved = await client.server.jobs.service.load_checkpoint(job_id)
    assert saved is not None
    assert orjson.loads(saved) == {"row": 3}
    assert [r.getMessage() for r in caplog.records if r.name == f"herald.jobs.{job_id}"] == ["tallied"]


async def test_a_plain_job_is_cancelled_at_its_next_checkpoint(client: InMemoryClient) -> None:
    job_id = (await client.call_tool("spin"))["structuredContent"]["jobId"]
    async with asyncio.timeout(10):
        await job_event(client.server, job_id, "progress")
    other = (await client.call_tool("tally", {"rows": 1}))["structuredContent"]["jobId"]
    assert (await status_of(client, other))["status"] == "completed", "a spinning job holds no other"
    await client.call_tool("cancel_job", {"jobId": job_id})
    assert (await status_of(client, job_id))["status"] == "cancelled"


async def test_a_plain_job_fails_and_saves_results_as_an_async_one(client: InMemoryClient) -> None:
    failed = await status_of(client, (await client.call_tool("refuses"))["structuredContent"]["jobId"])
    assert failed["error"] == {
        "code": "no_rows",
        "message": "There is nothing to count.",
        "hint": "Send at least one row.",
    }
    saved = await status_of(client, (await client.call_tool("saves"))["structuredContent"]["jobId"])
    assert saved["events"][-1]["summary"] == "saved a report"
    read = await client.request("resources/read", {"uri": saved["resultResourceId"]})
    assert read["contents"][0]["text"] == "all good"


def test_the_context_type_must_fit_the_function() -> None:
    server = Server("mismatch")
    with pytest.raises(TypeError, match="worker thread, so its context is a SyncJobContext"):

        @server.job
        def plain(ctx: JobContext) -> None: ...

    with pytest.raises(TypeError, match="an async def awaits, so its context is a JobContext"):

        @server.job
        async def awaiting(ctx: SyncJobContext) -> None: ...
