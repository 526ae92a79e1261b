"""A real uvicorn server on a free loopback port, serving a small herald server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from herald import Context, Server
from herald.protocol.sse import SSEDecoder, SSEEvent
from herald.runtime import JobContext
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.messages import POST_HEADERS, initialize

HEADERS = POST_HEADERS
INIT_PARAMS = initialize(elicitation={})["params"]
GATES: dict[str, asyncio.Event] = {}
STARTED: dict[str, asyncio.Event] = {}
CANCELLED: dict[str, asyncio.Event] = {}


def event(events: dict[str, asyncio.Event], name: str) -> asyncio.Event:
    return events.setdefault(name, asyncio.Event())


def build_server() -> Server:
    server = Server("http-test")

    @server.tool
    async def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool
    async def steps(count: int, ctx: Context) -> str:
        """Report progress `count` times."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count)
        return f"done {count}"

    @server.tool
    async def flood(gate: str, ctx: Context) -> str:
        """Reports progress until cancelled, which it records: a stream that never ends by itself."""
        step = 0
        try:
            while True:
                step += 1
                await ctx.report_progress(step)
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            event(CANCELLED, gate).set()
            raise

    @server.tool
    async def interrupted(ctx: Context) -> str:
        """Reports, closes its stream (SEP-1699), then finishes while nobody listens."""
        await ctx.report_progress(1, 2)
        ctx.close_stream()
        await ctx.report_progress(2, 2)
        return "finished after the stream closed"

    @server.tool
    async def ask_name(ctx: Context) -> str:
        """Elicits a name."""
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"Hello, {answer['content']['name']}!"

    @server.tool
    async def wait(gate: str) -> str:
        """Waits for the test to open a gate; records a cancellation."""
        event(STARTED, gate).set()
        try:
            await event(GATES, gate).wait()
        except asyncio.CancelledError:
            event(CANCELLED, gate).set()
            raise
        return f"opened {gate}"

    @server.tool
    async def report_then_wait(gate: str, ctx: Context) -> str:
        """Reports progress (so the answer becomes a stream), then waits like `wait`."""
        await ctx.report_progress(1, 2)
        event(STARTED, gate).set()
        try:
            await event(GATES, gate).wait()
        except asyncio.CancelledError:
            event(CANCELLED, gate).set()
            raise
        return f"opened {gate}"

    @server.job()
    async def tally(count: int, ctx: JobContext) -> dict[str, int]:
        """Counts to `count` once the test opens the gate named "tally"."""
        await event(GATES, "tally").wait()
        for step in range(1, count + 1):
            await ctx.report_progress(100 * step / count, f"step {step}")
        return {"count": count}

    @server.resource("demo://note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    return server


@dataclass
class Running:
    server: Server
    url: str
    client: httpx.AsyncClient
    app: Any

    async def post(self, body: Any, **headers: str) -> httpx.Response:
        return await self.client.post(self.url, json=body, headers={**HEADERS, **headers})

    async def initialize(self, version: str = "2025-11-25") -> str:
        response = await self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {**INIT_PARAMS, "protocolVersion": version},
            }
        )
        session_id = response.headers["mcp-session-id"]
        await self.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, **{"mcp-session-id": session_id}
        )
        return session_id


class EventReader:
    """Reads an SSE response event by event, across several waits."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = response.aiter_bytes()
        self._decoder = SSEDecoder()
        self._ready: list[SSEEvent] = []

    async def next(self) -> SSEEvent | None:
        while not self._ready:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                return None
            self._ready.extend(self._decoder.feed(chunk))
        return self._ready.pop(0)

    async def take(self, until_id: Any = None, limit: int = 1000) -> list[SSEEvent]:
        """Events until the reply with `until_id`, `limit` events, or the end of the stream."""
        events: list[SSEEvent] = []
        while len(events) < limit and (event := await self.next()) is not None:
            events.append(event)
            if until_id is not None and event.data and orjson.loads(event.data).get("id") == until_id:
                break
        return events


async def read_events(response: httpx.Response, until_id: Any = None, limit: int = 1000) -> list[SSEEvent]:
    return await EventReader(response).take(until_id, limit)


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    GATES.clear()
    STARTED.clear()
    CANCELLED.clear()
    server = build_server()
    config = HttpConfig(session_ttl=60, keepalive_interval=0.2, max_body_bytes=10_000)
    async with serve_http(server, config) as (url, app), httpx.AsyncClient(timeout=10) as client:
        yield Running(server, url, client, app)
