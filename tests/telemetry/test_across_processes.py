"""One trace from a client's call to its job's completion, across a replica and the worker
that took the job over, on SQLite and on Redis, exported over real OTLP/HTTP.

The client (herald's, telemetry on in this process) calls `start_bulk_gift_analysis` on a
`giftgenius serve` that runs jobs itself. SIGTERM, as a rolling restart sends, makes the
replica hand the job back; a `giftgenius worker` on the same store takes it and completes
it. Both processes export to a receiver this test runs: the replica's `tools/call` span
is the child of the client's span, and both runs of the job are children of that call,
whichever process ran them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from opentelemetry.trace import format_span_id, format_trace_id

from herald.client import connect_http
from herald.testing import free_port
from herald.testing.otlp import OtlpReceiver
from herald.testing.telemetry import recorded
from tests.giftgenius.test_bulk_job import employees
from tests.jobs.test_shutdown import until_ended
from tests.redis_server import redis_server
from tests.servers import GIFTGENIUS, running_past, started

pytestmark = pytest.mark.slow

JOB_SPAN = "job start_bulk_gift_analysis"


@contextlib.contextmanager
def store_of(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "redis":
        with redis_server() as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path / 'store.db'}"


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_a_job_taken_over_by_another_process_stays_in_the_callers_trace(
    kind: str, tmp_path: Path
) -> None:
    csv = employees(20_000, distinct=True)
    with (
        OtlpReceiver() as receiver,
        store_of(kind, tmp_path) as store,
        ExitStack() as stack,
        recorded() as here,
    ):

        def replica(port: int) -> list[str]:
            return [
                *GIFTGENIUS,
                "serve",
                "--quiet",
                "--port",
                str(port),
                "--store",
                store,
                "--job-lease",
                "2",
            ]

        port = free_port()
        server = stack.enter_context(
            started(replica(port), tmp_path / "replica.log", port, env=receiver.environment("replica"))
        )
        # Waiting already: a worker started after the call could find the job done.
        worker = [*GIFTGENIUS, "worker", "--quiet", "--store", store, "--job-lease", "2"]
        stack.enter_context(started(worker, tmp_path / "worker.log", env=receiver.environment("worker")))
        url = f"http://127.0.0.1:{port}/mcp"
        async with connect_http(url, False) as client:
            job_id = (await client.call_tool("start_bulk_gift_analysis", {"csv": csv}))["structuredContent"][
                "jobId"
            ]
        running = await running_past(store, job_id, 10)
        assert running is not None, "the job ended before the restart"
        server.terminate()  # a clean stop ends as uvicorn leaves it, by the signal re-raised
        port = free_port()  # a replica again, for the status: the worker serves nothing
        asking = [*replica(port), "--no-worker"]  # only to ask: the worker is the one to take the job
        stack.enter_context(started(asking, tmp_path / "again.log", port))
        ended = until_ended(f"http://127.0.0.1:{port}/mcp", job_id)
        assert ended["status"] == "completed", ended.get("error")
        await asyncio.to_thread(receiver.wait_for, JOB_SPAN, 2)
        spans = receiver.spans()

    client_span = here.span("tools/call start_bulk_gift_analysis")
    trace_id = format_trace_id(client_span.context.trace_id)
    (call,) = [span for span in spans if span.name == "tools/call start_bulk_gift_analysis"]
    assert (call.service, call.kind, call.trace_id) == ("replica", "SERVER", trace_id)
    assert call.parent_span_id == format_span_id(client_span.context.span_id), "the server joined the client"
    runs = sorted((span for span in spans if span.name == JOB_SPAN), key=lambda span: span.start_ns)
    assert [run.service for run in runs] == ["replica", "worker"]
    for run in runs:
        assert run.trace_id == trace_id
        assert run.parent_span_id == call.span_id, "each run is the call's child, on any process"
        assert run.attributes["herald.job.id"] == job_id
    first, second = runs
    assert first.attributes["herald.job.outcome"] == "unfinished"
    assert first.events[0] == "job.started"
    assert second.attributes["herald.job.resumed"] is True
    assert second.attributes["herald.job.outcome"] == "completed"
    assert second.events[-1] == "job.completed"
