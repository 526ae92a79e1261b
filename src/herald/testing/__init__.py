"""Test doubles shipped as API: an in-memory client that speaks both eras, and the
conformance checks every store (`check_event_log`, `check_job_store`) and every transport
(`check_transport`, against `check_server()`) must pass.

`InMemoryClient` drives a real `Connection` through the same byte path as stdio
(encode, `receive_data`, decode), so tests exercise the codec and the session rules,
not a shortcut around them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import orjson

from herald.protocol.codec import Outgoing, encode
from herald.protocol.messages import JSONObject, Notification, Request, RequestId
from herald.protocol.modern import with_envelope
from herald.protocol.versions import (
    LATEST_HANDSHAKE_VERSION,
)
from herald.server.app import Server
from herald.server.connection import Connection
from herald.server.outbox import Outbox
from herald.stores.conformance import check_event_log, check_job_queue, check_job_store, check_session_store
from herald.testing.jobs import job_ended, job_event
from herald.testing.ports import free_port, wait_until_listening
from herald.testing.transport_check import WireSession, check_server, check_transport

__all__ = [
    "ClientAnswer",
    "InMemoryClient",
    "RPCError",
    "WireSession",
    "check_event_log",
    "check_job_queue",
    "check_job_store",
    "check_server",
    "check_session_store",
    "check_transport",
    "connect",
    "free_port",
    "job_ended",
    "job_event",
    "redis_server",
    "wait_until_listening",
]

CLIENT_INFO = {"name": "herald-testing", "version": "1.0.0"}

#: How a test client answers server-to-client requests: (method, params) -> result.
ClientAnswer = Callable[[str, JSONObject], Awaitable[JSONObject]]


class RPCError(Exception):
    """A JSON-RPC error response, as the client received it."""

    def __init__(self, error: JSONObject):
        super().__init__(f"{error['code']}: {error['message']}")
        self.code: int = error["code"]
        self.message: str = error["message"]
        self.data: Any = error.get("data")


class _Pipe(Outbox):
    """The server's outbox: every message is encoded to bytes and decoded for the client."""

    def __init__(self, client: InMemoryClient):
        self._client = client

    def send(self, message: Outgoing) -> None:
        self._client._deliver(orjson.loads(encode(message)))

    async def drain(self) -> None:
        await asyncio.sleep(0)


class InMemoryClient:
    """A client wired to a `Connection` in the same event loop; use it as `async with`.

    `modern=True` sends every request with the 2026-07-28 `_meta` envelope instead of
    a handshake; otherwise call `initialize()` first, as a handshake-era client does.
    """

    def __init__(
        self,
        server: Server,
        *,
        modern: bool = False,
        capabilities: JSONObject | None = None,
        answer: ClientAnswer | None = None,
    ):
        self.server = server
        self.answer = answer
        self.modern = modern
        self.capabilities = capabilities or {}
        self.connection = Connection(server, _Pipe(self))
        self.received: list[Any] = []
        self.notifications: list[JSONObject] = []
        self.server_requests: list[JSONObject] = []
        #: Answers to server-to-client requests run here; the client's block owns them.
        self._answering = asyncio.TaskGroup()
        self._open = False
        self._waiting: dict[RequestId, asyncio.Future[JSONObject]] = {}
        self._ids = itertools.count(1)
        self._frames: asyncio.Queue[Any] = asyncio.Queue()

    def _deliver(self, message: Any) -> None:
        self.received.append(message)  # a batch reply stays one list, as it was on the wire
        self._frames.put_nowait(message)
        for item in message if isinstance(message, list) else [message]:
            if "method" in item and "id" in item:
                self.server_requests.append(item)
                self._answering.create_task(self._answer(item))
            elif "method" in item:
                self.notifications.append(item)
            elif (future := self._waiting.pop(item.get("id"), None)) is not None and not future.done():
                future.set_result(item)

    async def _answer(self, request: JSONObject) -> None:
        """Answer a server-to-client request with `answer`, or refuse it as a plain client would."""
        if self.answer is None:
            reply: JSONObject = {
                "error": {"code": -32601, "message": f"Method not found: {request['method']}"}
            }
        else:
            reply = {"result": await self.answer(request["method"], request.get("params") or {})}
        self.send_raw(orjson.dumps({"jsonrpc": "2.0", "id": request["id"], **reply}))

    async def next_frame(self) -> Any:
        """The next frame the server sends that this test has not taken yet (waits up to 10 s)."""
        return await asyncio.wait_for(self._frames.get(), 10)

    def drop_frames(self) -> None:
        """Forget frames received so far, so `next_frame` waits for new ones."""
        self.received.clear()
        while not self._frames.empty():
            self._frames.get_nowait()

    def send_raw(self, data: bytes) -> None:
        """Hand the server one raw frame, exactly as a transport would."""
        self.connection.receive_data(data)

    def notify(self, method: str, params: JSONObject | None = None) -> None:
        self.send_raw(encode(Notification(method, params)))

    async def request_raw(
        self, method: str, params: JSONObject | None = None, *, request_id: RequestId | None = None
    ) -> JSONObject:
        """Send a request and return the whole response message (result or error)."""
        request_id = next(self._ids) if request_id is None else request_id
        if self.modern:
            params = self._with_envelope(params)
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self.send_raw(encode(Request(request_id, method, params)))
        return await asyncio.wait_for(future, timeout=10)

    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return its result; raise `RPCError` for an error response."""
        response = await self.request_raw(method, params)
        if "error" in response:
            raise RPCError(response["error"])
        result: JSONObject = response["result"]
        return result

    def _with_envelope(self, params: JSONObject | None) -> JSONObject:
        return with_envelope(params, capabilities=self.capabilities)

    async def initialize(self, version: str = LATEST_HANDSHAKE_VERSION) -> JSONObject:
        result = await self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": self.capabilities, "clientInfo": CLIENT_INFO},
        )
        self.notify("notifications/initialized")
        return result

    async def call_tool(self, name: str, arguments: JSONObject | None = None, **params: Any) -> JSONObject:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}, **params})

    async def __aenter__(self) -> InMemoryClient:
        await self._answering.__aenter__()
        await self.connection.__aenter__()
        self._open = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the server's side, then wait for answers still being given."""
        await self.connection.aclose()
        if self._open:
            self._open = False
            await self._answering.__aexit__(None, None, None)


@asynccontextmanager
async def connect(
    server: Server,
    *,
    modern: bool = False,
    version: str = LATEST_HANDSHAKE_VERSION,
    capabilities: JSONObject | None = None,
    answer: ClientAnswer | None = None,
) -> AsyncIterator[InMemoryClient]:
    """An initialized (or, with `modern`, envelope-sending) client for the duration of a block."""
    async with InMemoryClient(server, modern=modern, capabilities=capabilities, answer=answer) as client:
        if not modern:
            await client.initialize(version)
        yield client


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A private `redis-server` on a free loopback port, nothing on disk; yields its URL.

    Tests and benchmarks get a Redis of their own, so a shared one is never written to
    or flushed. Raises `FileNotFoundError` when no `redis-server` is installed.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server is not installed (make service-deps installs it)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(port, process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
