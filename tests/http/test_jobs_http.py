"""Job events over Streamable HTTP: the session's GET stream, and subscriptions/listen."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema_rs
import orjson

from herald.jobs.events import all_schemas
from tests.http.conftest import GATES, HEADERS, EventReader, Running, event

VALIDATORS = {name: jsonschema_rs.validator_for(schema) for name, schema in all_schemas().items()}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def job_events(frames: list[Any]) -> list[dict[str, Any]]:
    messages = [orjson.loads(frame.data) for frame in frames if frame.data]
    found = [
        message["params"]
        for message in messages
        if message.get("method", "").startswith("notifications/job/")
    ]
    for params in found:
        VALIDATORS[params["type"]].validate(params)
    return found


async def test_session_get_stream_carries_the_jobs_of_the_session_and_resumes(running: Running) -> None:
    async with asyncio.timeout(10):
        await _session_stream(running)


async def _session_stream(running: Running) -> None:
    session_id = await running.initialize()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "tally", "arguments": {"count": 4}},
    }
    started = await running.post(call, **{"mcp-session-id": session_id})
    job_id = started.json()["result"]["structuredContent"]["jobId"]
    get_headers = {"accept": "text/event-stream", "mcp-session-id": session_id}
    async with running.client.stream("GET", running.url, headers=get_headers) as response:
        reader = EventReader(response)
        first = await reader.take(limit=1)
        event(GATES, "tally").set()
        more = await reader.take(limit=2)
    seen = job_events(first + more)
    assert [params["type"] for params in seen][:1] == ["job.created"], "kept for the session before any GET"
    assert all(params["jobId"] == job_id for params in seen)
    last_id = more[-1].id
    assert last_id is not None
    async with running.client.stream(
        "GET", running.url, headers={**get_headers, "last-event-id": last_id}
    ) as response:
        reader = EventReader(response)
        rest: list[Any] = []
        while not rest or job_events(rest)[-1]["type"] != "job.completed":
            rest += await reader.take(limit=1)
    everything = seen + job_events(rest)
    assert [params["eventId"] for params in everything] == [f"{job_id}:{n}" for n in range(1, 8)]
    assert [params["type"] for params in everything] == [
        "job.created",
        "job.started",
        "job.progress",
        "job.progress",
        "job.progress",
        "job.progress",
        "job.completed",
    ]


async def test_listen_filter_for_job_events(running: Running) -> None:
    async with asyncio.timeout(10):
        await _listen(running)


async def _listen(running: Running) -> None:
    discover = await running.post(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
        **{"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"},
    )
    assert "io.herald/job-events" in discover.json()["result"]["capabilities"]["extensions"]
    listen = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "subscriptions/listen",
        "params": {"notifications": {"io.herald/jobEvents": True}, "_meta": META},
    }
    headers = {**HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"}
    async with running.client.stream("POST", running.url, json=listen, headers=headers) as response:
        reader = EventReader(response)
        ack = await reader.take(limit=1)
        assert orjson.loads(ack[0].data)["params"]["notifications"] == {"io.herald/jobEvents": True}
        event(GATES, "tally").set()
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "tally", "arguments": {"count": 2}, "_meta": META},
        }
        await running.post(
            call, **{"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "tally"}
        )
        frames = await reader.take(limit=5)
    events = job_events(frames)
    assert [params["type"] for params in events] == [
        "job.created",
        "job.started",
        "job.progress",
        "job.progress",
        "job.completed",
    ]
    messages = [orjson.loads(frame.data) for frame in frames]
    assert {m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] for m in messages} == {5}
