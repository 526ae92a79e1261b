"""A job's run as a span in the trace of the call that started it, and every metric herald keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode, format_trace_id

from herald import JobContext, JobFailure, Server
from herald.stores.sqlite import SqliteJobStore
from herald.testing import connect, job_ended
from herald.testing.telemetry import Recorded, recorded

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture
def seen() -> Iterator[Recorded]:
    with recorded() as found:
        yield found


def build(tmp_path: Path, gate: asyncio.Event) -> Server:
    server = Server("counting")
    server.use_job_store(SqliteJobStore(tmp_path / "jobs.db"))

    @server.job
    async def count(ctx: JobContext, up_to: int) -> dict[str, Any]:
        for step in range(1, up_to + 1):
            await ctx.report_progress(100 * step / up_to, f"counted {step}")
        await gate.wait()
        return {"counted": up_to}

    @server.job
    async def broken(ctx: JobContext) -> dict[str, Any]:
        raise JobFailure("bad_input", "The file has no rows.", "Attach the file again.")

    return server


async def test_a_job_run_is_a_span_in_the_trace_of_the_call_that_started_it(
    seen: Recorded, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    server = build(tmp_path, gate)
    async with server.running(), connect(server) as client:
        started = await client.call_tool("count", {"up_to": 3}, _meta={"traceparent": TRACEPARENT})
        job_id = started["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            while seen.total("herald.jobs.running") != 1:  # noqa: ASYNC110 - a gauge has no event
                await asyncio.sleep(0.01)
            gate.set()
            await job_ended(server, job_id)
        stored = await server.jobs.reader.get(job_id)
        assert stored is not None
        assert stored.trace_context is not None
        assert stored.trace_context["traceparent"].startswith(f"00-{TRACE_ID}-")

    call = seen.span("tools/call count")
    run = seen.span("job count")
    assert run.kind is SpanKind.CONSUMER
    assert format_trace_id(run.context.trace_id) == TRACE_ID
    assert run.parent.span_id == call.context.span_id, "the run's parent is the call, from the job's record"
    assert run.attributes["herald.job.id"] == job_id
    assert run.attributes["herald.job.outcome"] == "completed"
    assert [event.name for event in run.events] == [
        "job.started",
        "job.progress",
        "job.progress",
        "job.progress",
        "job.completed",
    ]
    assert run.events[1].attributes["herald.job.stage"] == "counted 1"
    assert seen.total("herald.jobs.started", {"gen_ai.tool.name": "count"}) == 1
    assert seen.total("herald.jobs.ended", {"herald.job.outcome": "completed"}) == 1
    assert seen.total("herald.job.queue.duration") == 1
    assert seen.total("herald.job.events") == 6, "created, started, three progress, completed"
    assert seen.total("herald.store.write.duration") >= 3, "progress goes in chains: fewer writes than events"
    assert seen.total("herald.jobs.running") == 0
    assert seen.total("herald.jobs.queued") == 0
    outcomes = {
        (point.attributes["gen_ai.tool.name"], point.attributes["herald.job.outcome"]): point.value
        for point in seen.points("herald.jobs.ended")
    }
    assert outcomes[("broken", "failed")] == 0, "every tool's counters start at zero, before its first job"
    assert outcomes[("count", "cancelled")] == 0


async def test_a_failed_job_sets_its_span_status(seen: Recorded, tmp_path: Path) -> None:
    server = build(tmp_path, asyncio.Event())
    async with server.running(), connect(server) as client:
        job_id = (await client.call_tool("broken"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await job_ended(server, job_id)

    run = seen.span("job broken")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "The file has no rows."
    assert run.attributes["error.type"] == "bad_input"
    assert seen.total("herald.jobs.ended", {"herald.job.outcome": "failed"}) == 1


async def test_a_job_started_outside_any_trace_starts_its_own(seen: Recorded, tmp_path: Path) -> None:
    server = build(tmp_path, asyncio.Event())
    server.jobs.service  # noqa: B018 - opened before telemetry saw any call
    async with server.running():
        job = await server.jobs.service.create("broken", {})
        assert job.trace_context is None, "no span was current: nothing to carry"


async def test_a_task_runs_in_the_trace_of_the_call_that_created_it(seen: Recorded) -> None:
    from tests.jobs.test_tasks import TASKS, until_status
    from tests.jobs.test_tasks import build as build_tasks

    async with connect(build_tasks(), modern=True, capabilities=TASKS) as client:
        created = await client.call_tool("compute", {"seconds": 0.01}, _meta={"traceparent": TRACEPARENT})
        await until_status(client, created["taskId"], "completed")

    call = seen.span("tools/call compute")
    assert format_trace_id(call.context.trace_id) == TRACE_ID
    (run,) = [span for span in seen.spans() if span.name.startswith("job ")]
    assert run.parent.span_id == call.context.span_id
    assert run.attributes["herald.job.outcome"] == "completed"
