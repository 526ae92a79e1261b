"""MCP Tasks on the wire: shapes from the official types, results within the tool's schema.

A job tool (`@server.job`) started as a task is the case that broke clients: its task's
result must keep the tool's `outputSchema`, which the official TypeScript client checks.
"""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema_rs
import mcp_types
import pytest

from herald import Server
from herald.runtime import JobContext, JobFailure
from herald.testing import InMemoryClient, connect

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def build(page_size: int = 100) -> Server:
    server = Server("task-wire", page_size=page_size)

    @server.tool(task_support="optional")
    async def compute(seconds: float) -> str:
        """Takes a while."""
        await asyncio.sleep(seconds)
        return f"computed for {seconds}s"

    @server.job()
    async def counting(ctx: JobContext) -> dict[str, Any]:
        """A job tool, reachable as a task."""
        await ctx.report_progress(50, "half")
        return {"done": True, "summary": "Counted to ten."}

    @server.job()
    async def refusing(ctx: JobContext) -> dict[str, Any]:
        """A job tool whose job fails."""
        raise JobFailure("no_input", "There was nothing to count.", "Give it something to count.")

    @server.job()
    async def waiting(ctx: JobContext) -> dict[str, Any]:
        """A job tool whose job runs until it is cancelled."""
        await asyncio.Event().wait()
        return {}

    return server


async def output_validator(client: InMemoryClient, name: str) -> jsonschema_rs.Validator:
    tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    return jsonschema_rs.validator_for(tools[name]["outputSchema"])


async def until_status(client: InMemoryClient, task_id: str, *wanted: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            task = await client.request("tasks/get", {"taskId": task_id})
            if task["status"] in wanted:
                return task
            await asyncio.sleep(0.01)


def errors(validator: jsonschema_rs.Validator, instance: Any) -> list[str]:
    return [error.message for error in validator.iter_errors(instance)]


async def test_core_job_task_result_keeps_the_output_schema() -> None:
    async with connect(build()) as client:
        validator = await output_validator(client, "counting")
        created = await client.call_tool("counting", task={"ttl": 60000})
        task_id = created["task"]["taskId"]
        result = await client.request("tasks/result", {"taskId": task_id})
        assert errors(validator, result["structuredContent"]) == []
        link = result["content"][1]
        assert result["structuredContent"] == {
            "jobId": task_id,
            "status": "completed",
            "resultResourceId": link["uri"],
            "summary": "Counted to ten.",
        }
        assert "isError" not in result
        assert result["content"][0]["text"] == "Counted to ten."
        assert link["type"] == "resource_link"
        contents = (await client.request("resources/read", {"uri": link["uri"]}))["contents"]
        assert '"done":true' in contents[0]["text"]
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        mcp_types.CallToolResult.model_validate(result)


async def test_extension_job_task_result_keeps_the_output_schema() -> None:
    async with connect(build(), modern=True, capabilities=TASKS) as client:
        validator = await output_validator(client, "counting")
        created = await client.call_tool("counting")
        assert created["resultType"] == "task"
        done = await until_status(client, created["taskId"], "completed")
        structured = done["result"]["structuredContent"]
        assert errors(validator, structured) == []
        assert structured["status"] == "completed"
        assert structured["resultResourceId"] == done["result"]["content"][1]["uri"]
        assert done["result"]["content"][1]["type"] == "resource_link"


async def test_a_job_tool_answers_pending_at_once_and_its_task_the_ending() -> None:
    """Both answers are the same tool's, so both keep the one outputSchema."""
    async with connect(build()) as client:
        validator = await output_validator(client, "counting")
        plain = await client.call_tool("counting")
        assert errors(validator, plain["structuredContent"]) == []
        job_id = plain["structuredContent"]["jobId"]
        assert plain["structuredContent"] == {"jobId": job_id, "status": "pending"}
        result = await client.request("tasks/result", {"taskId": job_id})
        assert errors(validator, result["structuredContent"]) == []
        assert result["structuredContent"]["jobId"] == job_id
        assert result["structuredContent"]["status"] == "completed"


async def test_a_failed_job_tool_task_answers_its_error_within_the_schema() -> None:
    async with connect(build()) as client:
        validator = await output_validator(client, "refusing")
        task_id = (await client.call_tool("refusing", task={}))["task"]["taskId"]
        result = await client.request("tasks/result", {"taskId": task_id})
        assert errors(validator, result["structuredContent"]) == []
        assert result["isError"] is True
        assert result["structuredContent"] == {
            "jobId": task_id,
            "status": "failed",
            "error": {
                "code": "no_input",
                "message": "There was nothing to count.",
                "hint": "Give it something to count.",
            },
        }
        assert result["content"][0]["text"] == "There was nothing to count."
        mcp_types.CallToolResult.model_validate(result)


async def test_a_cancelled_job_tool_task_answers_within_the_schema() -> None:
    async with connect(build()) as client:
        validator = await output_validator(client, "waiting")
        task_id = (await client.call_tool("waiting", task={}))["task"]["taskId"]
        cancelled = await client.request("tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        result = await client.request("tasks/result", {"taskId": task_id})
        assert errors(validator, result["structuredContent"]) == []
        assert result["isError"] is True
        assert result["structuredContent"]["status"] == "cancelled"
        assert result["structuredContent"]["error"]["code"] == "cancelled"


async def test_core_cancel_of_a_terminal_task_is_invalid_params() -> None:
    async with connect(build()) as client:
        done = (await client.call_tool("compute", {"seconds": 0}, task={}))["task"]
        await client.request("tasks/result", {"taskId": done["taskId"]})
        refused = await client.request_raw("tasks/cancel", {"taskId": done["taskId"]})
        assert refused["error"]["code"] == -32602
        assert "completed" in refused["error"]["message"]
        assert (await client.request("tasks/get", {"taskId": done["taskId"]}))["status"] == "completed"
        running = (await client.call_tool("compute", {"seconds": 30}, task={}))["task"]
        cancelled = await client.request("tasks/cancel", {"taskId": running["taskId"]})
        mcp_types.CancelTaskResult.model_validate(cancelled)
        assert cancelled["status"] == "cancelled"
        again = await client.request_raw("tasks/cancel", {"taskId": running["taskId"]})
        assert again["error"]["code"] == -32602
        assert "cancelled" in again["error"]["message"]


async def test_extension_cancel_of_a_terminal_task_is_acknowledged() -> None:
    """SEP-2663: the server MUST acknowledge every tasks/cancel; the task keeps its status."""
    async with connect(build(), modern=True, capabilities=TASKS) as client:
        created = await client.call_tool("compute", {"seconds": 0})
        await until_status(client, created["taskId"], "completed")
        ack = await client.request("tasks/cancel", {"taskId": created["taskId"]})
        assert ack["resultType"] == "complete"
        assert "status" not in ack
        assert (await client.request("tasks/get", {"taskId": created["taskId"]}))["status"] == "completed"


async def test_core_shapes_are_the_wire_types() -> None:
    async with connect(build()) as client:
        created = await client.call_tool("compute", {"seconds": 0}, task={})
        task = mcp_types.CreateTaskResult.model_validate(created).task
        assert task.status == "working"
        assert task.ttl is not None
        assert task.ttl > 0
        await client.request("tasks/result", {"taskId": task.task_id})
        got = mcp_types.GetTaskResult.model_validate(
            await client.request("tasks/get", {"taskId": task.task_id})
        )
        assert got.status == "completed"
        assert got.created_at == task.created_at
        listed = mcp_types.ListTasksResult.model_validate(await client.request("tasks/list"))
        assert [entry.task_id for entry in listed.tasks] == [task.task_id]
        assert listed.next_cursor is None


async def test_tasks_list_pages_with_cursors() -> None:
    async with connect(build(page_size=2)) as client:
        started = [
            (await client.call_tool("compute", {"seconds": 0}, task={}))["task"]["taskId"] for _ in range(5)
        ]
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            page = await client.request("tasks/list", {"cursor": cursor} if cursor else {})
            assert len(page["tasks"]) <= 2
            seen += [task["taskId"] for task in page["tasks"]]
            pages += 1
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == started
        assert pages == 3


@pytest.mark.parametrize("cursor", ["garbage", 7])
async def test_tasks_list_refuses_bad_cursors(cursor: object) -> None:
    async with connect(build(page_size=2)) as client:
        bad = await client.request_raw("tasks/list", {"cursor": cursor})
        assert bad["error"]["code"] == -32602


async def test_tasks_list_cursor_from_another_listing_is_refused() -> None:
    async with connect(build(page_size=1)) as client:
        tools_cursor = (await client.request("tools/list"))["nextCursor"]
        bad = await client.request_raw("tasks/list", {"cursor": tools_cursor})
        assert bad["error"]["code"] == -32602


async def test_tasks_list_shows_only_the_sessions_own_tasks() -> None:
    server = build(page_size=1)
    async with connect(server) as first, connect(server) as second:
        mine = (await first.call_tool("compute", {"seconds": 0}, task={}))["task"]["taskId"]
        await second.call_tool("compute", {"seconds": 0}, task={})
        page = await first.request("tasks/list")
        assert [task["taskId"] for task in page["tasks"]] == [mine]
        assert "nextCursor" not in page
