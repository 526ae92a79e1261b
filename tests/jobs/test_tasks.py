"""MCP Tasks over jobs: the 2026-07-28 extension and the 2025-11-25 core shape."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import herald.server.tasks
from herald import Context, Server, ToolResult
from herald.content import text
from herald.protocol.errors import InternalError
from herald.runtime import JobContext
from herald.testing import InMemoryClient, connect
from tests.calls import calls_into

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
#: `tasks/result` calls waiting at once for tasks that are not ending.
WAITERS = 20
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


def build() -> Server:
    server = Server("tasks")

    @server.tool(task_support="optional")
    async def compute(seconds: float) -> str:
        """Takes a while."""
        await asyncio.sleep(seconds)
        return f"computed for {seconds}s"

    @server.tool(task_support="required")
    async def ask_first(ctx: Context) -> str:
        """Needs a name, asked inside the task."""
        answer = await ctx.elicit("Name?", NAME, key="who")
        return f"Hello, {answer['content']['name']}!"

    @server.tool(task_support="required")
    async def tool_error() -> ToolResult:
        """A business failure: the task completes with isError."""
        return ToolResult([text("no luck")], is_error=True)

    @server.tool(task_support="required")
    async def protocol_error() -> str:
        """A protocol failure: the task fails."""
        raise InternalError("the backend is down")

    @server.tool(task_support="required", task_preflight=lambda ctx: ctx.elicit("Name?", NAME, key="pre"))
    async def preflighted(ctx: Context) -> str:
        """Asks before the task exists."""
        return f"Task for {ctx.preflight['content']['name']}"

    @server.job()
    async def counting(ctx: JobContext) -> dict[str, Any]:
        """A job tool, reachable as a task."""
        await ctx.report_progress(50, "half")
        return {"done": True}

    return server


@pytest.fixture
async def modern() -> AsyncIterator[InMemoryClient]:
    async with connect(build(), modern=True, capabilities=TASKS) as client:
        yield client


async def until_status(client: InMemoryClient, task_id: str, *wanted: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            task = await client.request("tasks/get", {"taskId": task_id})
            if task["status"] in wanted:
                return task
            await asyncio.sleep(0.01)


async def test_extension_is_declared_only_in_discover(modern: InMemoryClient) -> None:
    discover = await modern.request("server/discover")
    assert discover["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"] == {}
    assert "tasks" not in discover["capabilities"]
    async with InMemoryClient(build()) as handshake:
        initialized = await handshake.initialize()
        assert initialized["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}


async def test_task_lifecycle(modern: InMemoryClient) -> None:
    created = await modern.call_tool("compute", {"seconds": 0.05})
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert created["ttlMs"] > 0
    assert not {"task", "result", "error", "ttl", "pollInterval"} & set(created)
    done = await until_status(modern, created["taskId"], "completed")
    assert done["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "computed for 0.05s"
    assert "requestState" not in done


async def test_without_the_extension(modern: InMemoryClient) -> None:
    modern.capabilities = {}
    sync = await modern.call_tool("compute", {"seconds": 0})
    assert sync["content"][0]["text"] == "computed for 0.0s"
    refused = await modern.request_raw("tools/call", {"name": "ask_first", "arguments": {}})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"]["extensions"] == {
        "io.modelcontextprotocol/tasks": {}
    }
    gated = await modern.request_raw("tasks/get", {"taskId": "whatever"})
    assert gated["error"]["code"] == -32021


async def test_input_required_then_update(modern: InMemoryClient) -> None:
    created = await modern.call_tool("ask_first")
    parked = await until_status(modern, created["taskId"], "input_required")
    assert parked["inputRequests"]["who"]["method"] == "elicitation/create"
    ack = await modern.request(
        "tasks/update",
        {
            "taskId": created["taskId"],
            "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}, "x": {}},
        },
    )
    assert {key: value for key, value in ack.items() if key != "_meta"} == {"resultType": "complete"}
    done = await until_status(modern, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_failures(modern: InMemoryClient) -> None:
    business = await until_status(modern, (await modern.call_tool("tool_error"))["taskId"], "completed")
    assert business["result"]["isError"] is True
    protocol = await until_status(modern, (await modern.call_tool("protocol_error"))["taskId"], "failed")
    assert protocol["error"] == {"code": -32603, "message": "the backend is down"}
    assert "result" not in protocol


async def test_cancel_is_idempotent(modern: InMemoryClient) -> None:
    """SEP-2663 acks every tasks/cancel, a terminal task's included (unlike 2025-11-25)."""
    created = await modern.call_tool("compute", {"seconds": 30})
    first = await modern.request("tasks/cancel", {"taskId": created["taskId"]})
    assert first["resultType"] == "complete"
    assert not {"taskId", "status", "result", "error", "inputRequests"} & set(first)
    await until_status(modern, created["taskId"], "cancelled")
    again = await modern.request("tasks/cancel", {"taskId": created["taskId"]})
    assert again["resultType"] == "complete"


async def test_unknown_task_and_removed_methods(modern: InMemoryClient) -> None:
    unknown = await modern.request_raw("tasks/get", {"taskId": "nope"})
    assert unknown["error"]["code"] == -32602
    for method in ("tasks/result", "tasks/list"):
        assert (await modern.request_raw(method, {"taskId": "x"}))["error"]["code"] == -32601


async def test_preflight_asks_before_the_task(modern: InMemoryClient) -> None:
    first = await modern.call_tool("preflighted")
    assert first["resultType"] == "input_required"
    assert "taskId" not in first
    created = await modern.call_tool(
        "preflighted",
        inputResponses={"pre": {"action": "accept", "content": {"name": "Alice"}}},
        requestState=first["requestState"],
    )
    assert created["resultType"] == "task"
    done = await until_status(modern, created["taskId"], "completed")
    assert "Alice" in done["result"]["content"][0]["text"]


async def test_job_tools_are_tasks_too(modern: InMemoryClient) -> None:
    created = await modern.call_tool("counting")
    assert created["resultType"] == "task"
    done = await until_status(modern, created["taskId"], "completed")
    assert done["result"]["structuredContent"]["jobId"] == created["taskId"]


async def test_core_shape_in_the_handshake_era() -> None:
    async with connect(build()) as client:
        created = await client.call_tool("compute", {"seconds": 0.05}, task={"ttl": 60000})
        task = created["task"]
        assert task["status"] == "working"
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        assert result["content"][0]["text"] == "computed for 0.05s"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
        assert got["status"] == "completed"
        listed = await client.request("tasks/list")
        assert [entry["taskId"] for entry in listed["tasks"]] == [task["taskId"]]
        long = (await client.call_tool("compute", {"seconds": 30}, task={}))["task"]
        cancelled = await client.request("tasks/cancel", {"taskId": long["taskId"]})
        assert cancelled["status"] == "cancelled"
        again = await client.request_raw("tasks/cancel", {"taskId": long["taskId"]})
        assert again["error"]["code"] == -32602  # 2025-11-25: a terminal task cannot be cancelled
        plain = await client.call_tool("compute", {"seconds": 0})
        assert plain["content"][0]["text"] == "computed for 0.0s"


async def test_a_waiting_tasks_result_costs_other_jobs_nothing() -> None:
    """A `tasks/result` waits on its own task's job, filed under its id: an event of another
    job runs no task code, however many calls wait."""
    server = build()
    async with connect(server) as client, asyncio.TaskGroup() as group:
        service = server.jobs.service
        ids = [
            (await client.call_tool("compute", {"seconds": 30}, task={}))["task"]["taskId"]
            for _ in range(WAITERS)
        ]
        waiting = [group.create_task(client.request("tasks/result", {"taskId": task_id})) for task_id in ids]
        async with asyncio.timeout(10):
            while not all(task_id in server.jobs._named for task_id in ids):  # noqa: ASYNC110
                await asyncio.sleep(0)  # the server says nowhere that a call started waiting
        other = await service.create("counting", {})
        with calls_into(herald.server.tasks) as counted:
            await service.start(other.job_id)
        assert sum(counted.values()) == 0, counted
        for task_id in ids:
            await client.request("tasks/cancel", {"taskId": task_id})
        ended = [await result for result in waiting]
        assert all(result["isError"] for result in ended), "each waiter heard its own task end"
