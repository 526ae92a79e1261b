"""`job_events` against real servers: every era and transport, drops, restarts, a killed process."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from herald.client import Client, JobEvent, JobEventTracker, connect_http, connect_stdio
from tests.client.conftest import HttpServer, gate, validate

#: Every test finishes well within this; a hang fails instead of blocking the suite.
LIMIT = 30


async def start(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    started = (await client.call_tool(tool, arguments))["structuredContent"]
    assert started["status"] == "pending"
    job_id: str = started["jobId"]
    return job_id


async def follow(client: Client, job_id: str) -> list[dict[str, Any]]:
    tracker = JobEventTracker(job_id)
    events = [event.to_params() async for event in client.job_events(job_id, tracker=tracker)]
    assert tracker.rejected == []
    return events


async def assert_whole_history(
    client: Client, job_id: str, events: list[dict[str, Any]], ending: str
) -> None:
    """Exactly the stored history, once each, in order, valid against the published schemas."""
    stored = (await client.job_status(job_id))["events"]
    assert events == stored
    assert [JobEvent.from_params(event).sequence for event in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "job.created"
    assert events[-1]["type"] == f"job.{ending}"
    validate(events)


def notified(client: Client, job_id: str) -> list[dict[str, Any]]:
    return [
        message["params"]
        for message in client.notifications
        if str(message["method"]).startswith("notifications/job/") and message["params"]["jobId"] == job_id
    ]


async def test_http_handshake_delivers_live_events_once(http_server: HttpServer) -> None:
    async with asyncio.timeout(LIMIT), connect_http(http_server.url) as client:
        await client.stream_open.wait()
        job_id = await start(client, "count", {"to": 5})
        events = await follow(client, job_id)
        await assert_whole_history(client, job_id, events, "completed")
        assert [e["type"] for e in events] == [
            "job.created",
            "job.started",
            *["job.progress"] * 5,
            "job.completed",
        ]
        assert notified(client, job_id), "the session's GET stream carried the events live"


async def test_http_modern_follows_a_job_by_polling(http_server: HttpServer) -> None:
    async with asyncio.timeout(LIMIT), connect_http(http_server.url, modern=True) as client:
        assert client.session_id is None
        job_id = await start(client, "count", {"to": 3})
        events = await follow(client, job_id)
        await assert_whole_history(client, job_id, events, "completed")
        assert notified(client, job_id) == [], "no session, no stream: the events came from the store"


@pytest.mark.slow
async def test_stdio_handshake_and_modern(stdio_argv: list[str]) -> None:
    for modern in (False, True):
        async with asyncio.timeout(LIMIT), connect_stdio(stdio_argv, modern=modern) as client:
            job_id = await start(client, "count", {"to": 4})
            events = await follow(client, job_id)
            await assert_whole_history(client, job_id, events, "completed")
            assert bool(notified(client, job_id)) is not modern


async def test_a_dropped_get_stream_resumes_without_loss_or_repeats(http_server: HttpServer) -> None:
    resumed: list[str] = []

    async def record(request: httpx.Request) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            resumed.append(request.headers["last-event-id"])

    http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), event_hooks={"request": [record]})
    async with asyncio.timeout(LIMIT), http, connect_http(http_server.url, http=http) as client:
        await client.stream_open.wait()
        job_id = await start(client, "gated", {"name": "drop"})
        events: list[dict[str, Any]] = []
        async for event in client.job_events(job_id):
            events.append(event.to_params())
            if event.kind == "progress" and event.payload["percentage"] == 25:
                session = http_server.app.state.sessions.held(client.session_id)
                session.standalone.detach()  # the server ends the live response mid-job
                gate("drop").set()  # what follows is sent while the client reconnects
        await assert_whole_history(client, job_id, events, "completed")
        await client.stream_open.wait()  # reopened on its own
        assert resumed, "the stream was reopened with Last-Event-ID"
        assert len(notified(client, job_id)) >= 3


@pytest.mark.slow
async def test_a_server_restart_mid_job_is_survived(http_server: HttpServer) -> None:
    async with asyncio.timeout(LIMIT), connect_http(http_server.url) as client:
        await client.stream_open.wait()
        first_session = client.session_id
        job_id = await start(client, "gated", {"name": "restart"})
        events: list[dict[str, Any]] = []
        async for event in client.job_events(job_id):
            events.append(event.to_params())
            if event.kind == "progress":
                # The old server fails the job as interrupted as it stops (nobody cancelled
                # it); the store keeps every event.
                await http_server.stop()
                await http_server.start()
        await assert_whole_history(client, job_id, events, "failed")
        assert events[-1]["error"]["code"] == "interrupted"
        assert client.session_id != first_session, "a new session on the new server"


@pytest.mark.slow
async def test_a_killed_stdio_server_is_started_again(stdio_argv: list[str]) -> None:
    async with asyncio.timeout(LIMIT), connect_stdio(stdio_argv) as client:
        job_id = await start(client, "stuck", {})
        events: list[dict[str, Any]] = []
        first_process = client.process
        async for event in client.job_events(job_id):
            events.append(event.to_params())
            if event.kind == "progress":
                first_process.kill()  # no shutdown at all: the job is left running in the store
        assert client.process is not first_process
        await assert_whole_history(client, job_id, events, "failed")
        assert events[-1]["error"]["code"] == "interrupted"
