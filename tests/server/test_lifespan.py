"""A server's lifespan: entered once around serving, reachable from contexts and parameters."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Any

import pytest

from herald import Context, FromLifespan, JobContext, Server, SyncJobContext
from herald.testing import InMemoryClient, connect, job_ended

#: How many jobs still ran here when each lifespan closed.
RUNNING_AT_CLOSE: list[int] = []


class Pool:
    """Stands for a database pool: opened at start, closed at stop."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.closed = False

    def query(self, what: str) -> str:
        assert not self.closed, "used after the lifespan closed it"
        return f"rows for {what}"


def build(events: list[str]) -> Server:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        events.append(f"open {server.name}")
        pool = Pool(events)
        yield {"pool": pool, "region": "eu"}
        pool.closed = True
        events.append("close")
        RUNNING_AT_CLOSE.append(server.jobs.runner.running)

    server = Server("life", lifespan=lifespan)

    @server.tool
    async def lookup(what: str, pool: Annotated[Pool, FromLifespan("pool")]) -> str:
        return pool.query(what)

    @server.tool
    def region(ctx: Context, everything: Annotated[dict[str, Any], FromLifespan()]) -> str:
        assert ctx.lifespan is everything
        return str(everything["region"])

    @server.job
    async def report(ctx: JobContext, pool: Annotated[Pool, FromLifespan("pool")]) -> dict[str, str]:
        assert ctx.lifespan["pool"] is pool
        return {"found": pool.query("report")}

    @server.job
    def sync_report(ctx: SyncJobContext, pool: Annotated[Pool, FromLifespan("pool")]) -> dict[str, str]:
        assert ctx.lifespan["pool"] is pool
        return {"found": pool.query("sync report")}

    @server.job
    async def slow(ctx: JobContext) -> dict[str, str]:
        await ctx.report_progress(10, "waiting")
        await asyncio.Event().wait()
        return {}

    return server


async def result_of(client: InMemoryClient, job_id: str) -> Any:
    async with asyncio.timeout(10):
        await job_ended(client.server, job_id)
    status = (await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"]
    read = await client.request("resources/read", {"uri": status["resultResourceId"]})
    return read["contents"][0]["text"]


async def test_tools_and_jobs_reach_what_the_lifespan_opened() -> None:
    events: list[str] = []
    server = build(events)
    async with server.running() as state, connect(server) as client:
        assert events == ["open life"]
        assert state["region"] == "eu"
        tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
        assert tools["lookup"]["inputSchema"]["properties"] == {"what": {"type": "string"}}
        assert "pool" not in str(tools["report"]["inputSchema"]), "the pool is no argument"
        assert (await client.call_tool("lookup", {"what": "mugs"}))["content"][0]["text"] == "rows for mugs"
        assert (await client.call_tool("region"))["content"][0]["text"] == "eu"
        for job, found in (("report", "rows for report"), ("sync_report", "rows for sync report")):
            job_id = (await client.call_tool(job))["structuredContent"]["jobId"]
            assert await result_of(client, job_id) == f'{{"found":"{found}"}}'
    assert events == ["open life", "close"]


async def test_the_lifespan_closes_after_the_jobs_stopped(caplog: pytest.LogCaptureFixture) -> None:
    RUNNING_AT_CLOSE.clear()
    server = build([])
    server.jobs.shutdown_grace_seconds = 0.1
    async with server.running(), connect(server) as client:
        await client.call_tool("slow")
        async with asyncio.timeout(10):
            while server.jobs.runner.running == 0:  # noqa: ASYNC110 - the runner has no event for it
                await asyncio.sleep(0.01)
    assert RUNNING_AT_CLOSE == [0], "the job had stopped before the pool closed"
    assert "did not stop" not in caplog.text, "every worker task heard the shutdown"


async def test_entered_again_while_running_it_only_yields() -> None:
    events: list[str] = []
    server = build(events)
    async with server.running() as first:
        async with server.running() as second:
            assert second is first
        assert server.lifespan_running, "leaving the inner block stops nothing"
    assert events == ["open life", "close"]
    assert not server.lifespan_running


async def test_a_tool_that_needs_a_lifespan_that_did_not_run_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with connect(build([])) as client:
        result = await client.call_tool("lookup", {"what": "mugs"})
    assert result["isError"] is True
    assert (
        result["content"][0]["text"]
        == "Tool 'lookup' is not available: the server has not finished starting."
    )
    assert "lifespan is not running" in caplog.text
    assert "Traceback" not in caplog.text


async def test_a_worker_that_serves_nothing_runs_the_lifespan_too() -> None:
    from herald.worker import serve_jobs

    events: list[str] = []
    server = build(events)
    stop = asyncio.Event()
    working = asyncio.ensure_future(serve_jobs(server, stop))
    try:
        async with asyncio.timeout(10):
            while not server.lifespan_running:  # noqa: ASYNC110 - the worker offers no event for it
                await asyncio.sleep(0.01)
        assert events == ["open life"]
        assert server.jobs.lifespan == {"pool": server.lifespan_state["pool"], "region": "eu"}
    finally:
        stop.set()
        async with asyncio.timeout(10):
            await working
    assert events == ["open life", "close"]
