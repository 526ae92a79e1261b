"""Jobs through a real Connection: start, events, schemas, polling, cancellation."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import jsonschema_rs
import orjson
import pytest

from herald import Server
from herald.jobs.events import all_schemas
from herald.runtime import JobContext, JobFailure
from herald.testing import InMemoryClient, connect, job_ended, job_event

GATE: dict[str, asyncio.Event] = {}


def build() -> Server:
    server = Server("jobs")

    @server.job()
    async def count(to: int, ctx: JobContext) -> dict[str, Any]:
        """Counts to `to`, reporting each step."""
        for step in range(1, to + 1):
            await ctx.report_progress(100 * step / to, f"step {step}", eta_seconds=float(to - step))
        return {"counted": to, "summary": f"counted to {to}"}

    @server.job()
    async def blocked(ctx: JobContext) -> dict[str, Any]:
        """Waits for the test."""
        await ctx.report_progress(10, "waiting")
        await GATE.setdefault("blocked", asyncio.Event()).wait()
        return {}

    @server.job()
    async def broken(ctx: JobContext) -> dict[str, Any]:
        """Fails with a hint."""
        raise JobFailure("bad_input", "The input has no rows.", "Add at least one row.")

    @server.job()
    async def backwards(ctx: JobContext) -> dict[str, Any]:
        """Reports progress that goes back: the job fails at the source."""
        await ctx.report_progress(50, "half")
        await ctx.report_progress(20, "less")
        return {}

    return server


def validate(events: list[dict[str, Any]]) -> None:
    schemas = {name: jsonschema_rs.validator_for(schema) for name, schema in all_schemas().items()}
    for event in events:
        schemas[event["type"]].validate(event)


async def finished(client: InMemoryClient, job_id: str) -> dict[str, Any]:
    """The job's last status, asked once it has ended (heard, not polled for)."""
    async with asyncio.timeout(10):
        await job_ended(client.server, job_id)
    status = (await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"]
    assert status["pollAfterMs"] is None, "an ended job asks for no more polls"
    return dict(status)


@pytest.fixture
async def client() -> Any:
    GATE.clear()
    async with connect(build()) as connected:
        yield connected


async def test_a_job_answers_at_once_and_reports_events(client: InMemoryClient) -> None:
    started = await client.call_tool("count", {"to": 4}, _meta={"progressToken": "tok"})
    job_id = started["structuredContent"]["jobId"]
    assert started["structuredContent"]["status"] == "pending"
    status = await finished(client, job_id)
    assert status["status"] == "completed"
    kinds = [event["type"] for event in status["events"]]
    assert kinds == ["job.created", "job.started", *["job.progress"] * 4, "job.completed"]
    validate(status["events"])
    notified = [n["params"] for n in client.notifications if n["method"].startswith("notifications/job/")]
    assert notified == status["events"], "the notifications are the events, in order"
    percentages = [event["percentage"] for event in status["events"] if event["type"] == "job.progress"]
    assert percentages == sorted(percentages)
    mirrored = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert [p["progress"] for p in mirrored] == percentages
    assert {p["progressToken"] for p in mirrored} == {"tok"}
    result = await client.request("resources/read", {"uri": status["resultResourceId"]})
    assert orjson.loads(result["contents"][0]["text"]) == {"counted": 4, "summary": "counted to 4"}
    assert status["events"][-1]["summary"] == "counted to 4"


async def test_polling_with_a_cursor_returns_only_what_is_new(client: InMemoryClient) -> None:
    client.server.jobs.poll_after_ms = 1234
    job_id = (await client.call_tool("blocked"))["structuredContent"]["jobId"]
    async with asyncio.timeout(10):
        await job_event(client.server, job_id, "progress")
    first = (await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"]
    assert first["stage"] == "waiting"
    assert first["pollAfterMs"] == 1234, "a running job asks to be polled as the server was told"
    GATE["blocked"].set()
    status = await finished(client, job_id)
    later = (await client.call_tool("get_job_status", {"jobId": job_id, "cursor": first["nextCursor"]}))[
        "structuredContent"
    ]
    first_ids = [event["eventId"] for event in first["events"]]
    assert [event["eventId"] for event in later["events"]] == [
        event["eventId"] for event in status["events"] if event["eventId"] not in first_ids
    ]
    assert later["events"][-1]["type"] == "job.completed"


async def test_failure_carries_code_message_and_hint(client: InMemoryClient) -> None:
    job_id = (await client.call_tool("broken"))["structuredContent"]["jobId"]
    status = await finished(client, job_id)
    assert status["status"] == "failed"
    assert status["error"] == {
        "code": "bad_input",
        "message": "The input has no rows.",
        "hint": "Add at least one row.",
    }
    validate(status["events"])


async def test_decreasing_progress_is_refused_at_the_source(client: InMemoryClient) -> None:
    job_id = (await client.call_tool("backwards"))["structuredContent"]["jobId"]
    status = await finished(client, job_id)
    assert status["status"] == "failed"
    percentages = [event["percentage"] for event in status["events"] if event["type"] == "job.progress"]
    assert percentages == [50], "the backwards report never became an event"


async def test_cancel_a_running_job(client: InMemoryClient) -> None:
    job_id = (await client.call_tool("blocked"))["structuredContent"]["jobId"]
    await client.call_tool("cancel_job", {"jobId": job_id})
    status = await finished(client, job_id)
    assert status["status"] == "cancelled"
    again = await client.call_tool("cancel_job", {"jobId": job_id})
    assert "already ended" in again["content"][0]["text"]
    validate(status["events"])


async def test_unknown_job(client: InMemoryClient) -> None:
    response = await client.request_raw(
        "tools/call", {"name": "get_job_status", "arguments": {"jobId": "nope"}}
    )
    assert response["error"]["code"] == -32602


async def test_event_schemas_are_published(client: InMemoryClient) -> None:
    read = await client.request("resources/read", {"uri": "herald://schemas/job-events"})
    schemas = orjson.loads(read["contents"][0]["text"])
    assert set(schemas) == {
        f"job.{kind}" for kind in ("created", "started", "progress", "completed", "failed", "cancelled")
    }


@pytest.mark.parametrize(
    "level", ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
)
async def test_job_log_accepts_every_mcp_level(level: str, caplog: pytest.LogCaptureFixture) -> None:
    from herald.runtime.context import PYTHON_LEVELS

    server = build()

    @server.job()
    async def chatty(ctx: JobContext) -> dict[str, Any]:
        """Logs one line at the level under test."""
        ctx.log(level, f"a {level} line")
        return {}

    caplog.set_level("DEBUG")
    async with connect(server) as client:
        job_id = (await client.call_tool("chatty"))["structuredContent"]["jobId"]
        assert (await finished(client, job_id))["status"] == "completed"
    [record] = [r for r in caplog.records if r.getMessage() == f"a {level} line"]
    assert record.levelno == PYTHON_LEVELS[level]


async def test_a_job_event_reaches_only_the_connections_that_follow_the_job() -> None:
    """Idle sessions cost a job event nothing: connections hear their own jobs by an index."""
    server = Server("indexed")
    heard: dict[str, list[str]] = {"mine": [], "other": [], "everyone": []}

    @server.job()
    async def quick(ctx: JobContext) -> dict[str, int]:
        """Finishes at once."""
        return {"done": 1}

    stop_mine = server.jobs.add_listener(lambda job, event: heard["mine"].append(event.kind), owner="me")
    server.jobs.add_listener(lambda job, event: heard["other"].append(event.kind), owner="someone else")
    server.jobs.add_listener(lambda job, event: heard["everyone"].append(event.kind))
    service = server.jobs.service
    job = await service.create("quick", {}, owner="me", progress_token=None)
    await service.start(job.job_id)
    assert heard == {"mine": ["created", "started"], "other": [], "everyone": ["created", "started"]}
    stop_mine()
    await service.complete(job.job_id, "herald://jobs/x/result.json", None)
    assert heard["mine"] == ["created", "started"], "an unsubscribed connection hears no more"
    assert heard["everyone"][-1] == "completed"
    assert "me" not in server.jobs._owned, "the index forgets an owner nobody follows"


async def test_job_ids_are_capabilities_of_128_random_bits(client: InMemoryClient) -> None:
    """Without authentication a job id is all a caller needs to read or cancel the job."""
    ids = [(await client.call_tool("count", {"to": 1}))["structuredContent"]["jobId"] for _ in range(20)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", job_id) for job_id in ids), ids
    assert len(set(ids)) == len(ids)


async def test_a_bare_job_decorator_and_the_top_level_names_make_a_job() -> None:
    """`@server.job` needs no parentheses, as `@server.tool` does not, and `JobContext` and
    `JobFailure` come from `herald` itself."""
    import herald
    import herald.runtime

    assert (herald.JobContext, herald.JobFailure) == (herald.runtime.JobContext, herald.runtime.JobFailure)
    server = Server("bare")

    @server.job
    async def double(value: int, ctx: JobContext) -> dict[str, Any]:
        """Doubles `value`."""
        await ctx.report_progress(50, "halfway")
        return {"doubled": 2 * value}

    assert double.__name__ == "double", "the decorator gives the function back"
    async with connect(server) as client:
        tools = {tool["name"]: tool for tool in (await client.request("tools/list", {}))["tools"]}
        assert tools["double"]["description"] == "Doubles `value`."
        job_id = (await client.call_tool("double", {"value": 21}))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            ended = await job_ended(server, job_id)
        assert ended.status == "completed"
        read = await client.request("resources/read", {"uri": ended.result_uri})
        assert orjson.loads(read["contents"][0]["text"]) == {"doubled": 42}
