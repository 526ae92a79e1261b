"""Job events over Streamable HTTP: the session's GET stream, and subscriptions/listen."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema_rs
import orjson

from herald.jobs.events import all_schemas
from tests.transports.http.conftest import GATES, HEADERS, EventReader, Running, event

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


async def test_listen_for_a_named_job_sends_its_events_so_far_then_the_rest(running: Running) -> None:
    """Start first, listen after: the events before the listen come first, nothing is missed."""
    discover = await running.post(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
        **{"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"},
    )
    assert "io.herald/job-events" in discover.json()["result"]["capabilities"]["extensions"]
    async with asyncio.timeout(10):
        job_id = await _start_tally(running)  # held at its gate: created, no more
        listen = _listen_request({"io.herald/jobEvents": {"jobIds": [job_id]}})
        async with running.client.stream(
            "POST", running.url, json=listen, headers=LISTEN_HEADERS
        ) as response:
            reader = EventReader(response)
            ack = await reader.take(limit=1)
            honoured = orjson.loads(ack[0].data)["params"]["notifications"]
            assert honoured == {"io.herald/jobEvents": {"jobIds": [job_id]}}
            first = await reader.take(limit=1)  # what happened before the listen: the job was created
            event(GATES, "tally").set()
            frames = first + await reader.take(limit=4)
    events = job_events(frames)
    assert [params["type"] for params in events] == [
        "job.created",
        "job.started",
        "job.progress",
        "job.progress",
        "job.completed",
    ]
    assert {params["jobId"] for params in events} == {job_id}
    messages = [orjson.loads(frame.data) for frame in frames]
    assert {m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] for m in messages} == {5}


async def test_listen_is_never_a_firehose(running: Running) -> None:
    """`true` means "my jobs", and a request without authentication has none: it is not honoured,
    and that subscription hears nothing of a job another client starts."""
    listen = _listen_request({"io.herald/jobEvents": True, "resourcesListChanged": True})
    async with asyncio.timeout(10):
        async with running.client.stream(
            "POST", running.url, json=listen, headers=LISTEN_HEADERS
        ) as response:
            reader = EventReader(response)
            ack = orjson.loads((await reader.take(limit=1))[0].data)
            assert "io.herald/jobEvents" not in ack["params"]["notifications"]
            job_id = await _start_tally(running)
            event(GATES, "tally").set()
            await running.server.jobs.runner.wait_ended(job_id)
            running.server.resource("demo://late", mime_type="text/plain")(
                lambda: "late"
            )  # a change it asked for
            heard = orjson.loads((await reader.take(limit=1))[0].data)
            assert heard["method"] == "notifications/resources/list_changed", "no job event came first"


MODERN_HEADERS = {"mcp-protocol-version": "2026-07-28"}
LISTEN_HEADERS = {**HEADERS, **MODERN_HEADERS, "mcp-method": "subscriptions/listen"}


async def _start_tally(running: Running) -> str:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "tally", "arguments": {"count": 2}, "_meta": META},
    }
    started = await running.post(call, **MODERN_HEADERS, **{"mcp-method": "tools/call", "mcp-name": "tally"})
    job_id: str = started.json()["result"]["structuredContent"]["jobId"]
    return job_id


def _listen_request(notifications: dict[str, Any]) -> dict[str, Any]:
    params = {"notifications": notifications, "_meta": META}
    return {"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": params}
