"""Every transport passes `herald.testing.transport_check`, plus what only it can show."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
import orjson
import pytest

from herald.protocol.messages import JSONObject
from herald.protocol.sse import SSEDecoder
from herald.testing import InMemoryClient
from herald.testing.http import serve_http
from herald.testing.transport_check import WAIT_SECONDS, check_server, check_transport
from herald.transports.http import HttpConfig

pytestmark = pytest.mark.slow  # server processes

INITIALIZE: JSONObject = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "check", "version": "1"},
    },
}
INITIALIZED: JSONObject = {"jsonrpc": "2.0", "method": "notifications/initialized"}
STDIO_SERVER = (
    "from herald.testing.transport_check import check_server\n"
    "from herald.transports.stdio import run_stdio\n"
    "run_stdio(check_server())\n"
)


def live_tasks() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks() if not task.done()}


class MemorySession:
    def __init__(self, client: InMemoryClient) -> None:
        self.client = client

    async def send(self, message: JSONObject) -> None:
        self.client.send_raw(orjson.dumps(message))

    async def receive(self) -> JSONObject:
        frame: JSONObject = await self.client.next_frame()
        return frame


class StdioSession:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, message: JSONObject) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(orjson.dumps(message) + b"\n")
        await self.process.stdin.drain()

    async def receive(self) -> JSONObject:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        assert line, "the server closed its output"
        message: JSONObject = orjson.loads(line)
        return message


class HttpSession:
    """One handshake-era session: every message a POST, every answer (JSON or SSE) queued."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url
        self.session_id = ""
        self.arrived: asyncio.Queue[JSONObject] = asyncio.Queue()
        self.readers: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        answered = await self.client.post(self.url, json=INITIALIZE, headers=self._headers())
        self.session_id = answered.headers["mcp-session-id"]
        await self.send(INITIALIZED)

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        return headers

    async def send(self, message: JSONObject) -> None:
        posted = asyncio.Event()
        reader = asyncio.ensure_future(self._post(message, posted))
        self.readers.add(reader)
        reader.add_done_callback(self.readers.discard)
        await posted.wait()  # sent in order: the next message leaves after this one arrived

    async def _post(self, message: JSONObject, posted: asyncio.Event) -> None:
        request = self.client.build_request("POST", self.url, json=message, headers=self._headers())
        response = await self.client.send(request, stream=True)
        posted.set()
        try:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                decoder = SSEDecoder()
                async for chunk in response.aiter_bytes():
                    for event in decoder.feed(chunk):
                        if event.data:
                            self.arrived.put_nowait(orjson.loads(event.data))
            elif response.status_code == 200:
                self.arrived.put_nowait(orjson.loads(await response.aread()))
        finally:
            await response.aclose()

    async def receive(self) -> JSONObject:
        return await self.arrived.get()

    async def aclose(self) -> None:
        """Every exchange must have ended by itself: a POST still open here is a bug."""
        await asyncio.wait_for(asyncio.gather(*self.readers), WAIT_SECONDS)


async def test_in_memory() -> None:
    before = live_tasks()
    async with InMemoryClient(check_server()) as client:
        await client.initialize()
        client.drop_frames()
        await check_transport(MemorySession(client))
    await asyncio.sleep(0)
    assert live_tasks() - before == set(), "a task outlived the connection"


async def test_stdio_and_eof_with_requests_in_flight() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", STDIO_SERVER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    session = StdioSession(process)
    try:
        await session.send(INITIALIZE)
        assert "result" in await asyncio.wait_for(session.receive(), WAIT_SECONDS)
        await session.send(INITIALIZED)
        await check_transport(session)
        # EOF with requests in flight: each is answered before the server exits.
        for request_id in range(1, 6):
            call = {"name": "count", "arguments": {"steps": 3}}
            await session.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call})
        assert process.stdin is not None
        process.stdin.close()
        assert process.stdout is not None
        rest = [
            orjson.loads(line)
            for line in (await asyncio.wait_for(process.stdout.read(), WAIT_SECONDS)).splitlines()
        ]
        assert sorted(message["id"] for message in rest if "id" in message) == [1, 2, 3, 4, 5]
        assert await asyncio.wait_for(process.wait(), WAIT_SECONDS) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_streamable_http_and_a_client_that_leaves_mid_stream() -> None:
    async with (
        serve_http(check_server(), HttpConfig(session_ttl=60)) as (url, app),
        httpx.AsyncClient(timeout=WAIT_SECONDS) as client,
    ):
        before = live_tasks()
        session = HttpSession(client, url)
        await session.open()
        await check_transport(session)
        # A client that leaves mid-stream: the server goes on serving the session.
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "count", "arguments": {"steps": 200}, "_meta": {"progressToken": 1}},
        }
        async with client.stream("POST", url, json=body, headers=session._headers()) as response:
            async for _ in response.aiter_bytes():
                break
        echo = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "still here"}},
        }
        answered = await client.post(url, json=echo, headers=session._headers())
        assert answered.json()["result"]["content"][0]["text"] == "still here"
        await session.aclose()
        held = app.state.sessions.held(session.session_id)
        async with asyncio.timeout(WAIT_SECONDS):
            while held.streams or live_tasks() - before:  # noqa: ASYNC110  # streams end with their last event
                await asyncio.sleep(0.01)
        assert held.streams == {}, "a finished stream is still held"
        assert live_tasks() - before == set(), "a task outlived its exchange"
        ended = await client.delete(url, headers=session._headers())
        assert ended.status_code == 200
        assert live_tasks() - before == set(), "a task outlived the session"
