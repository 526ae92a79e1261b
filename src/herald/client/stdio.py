"""A small MCP client over a spawned server's stdin/stdout, for both eras.

It exists for the command line (`giftgenius call`) and for end-to-end tests that need
a real process. Every raw frame in either direction can be observed through `on_wire`,
which is how `--show-wire` shows the exchange exactly as the protocol defines it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from herald.protocol.messages import JSONObject, Notification, Request, RequestId
from herald.protocol.versions import (
    CLIENT_CAPABILITIES_KEY,
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    PROTOCOL_VERSION_KEY,
)

CLIENT_INFO = {"name": "herald-client", "version": "0.1.0"}


@dataclass(frozen=True, slots=True)
class WireEvent:
    """One raw frame: which way it went, when, and its bytes."""

    direction: Literal["send", "receive"]
    timestamp: float
    data: bytes


class ServerError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, error: JSONObject):
        super().__init__(f"{error.get('message')} (code {error.get('code')})")
        self.code: int = error.get("code", 0)
        self.data: Any = error.get("data")


class StdioClient:
    """Talks to one spawned server process. Use `StdioClient.spawn(...)` as a context manager."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        *,
        modern: bool,
        on_wire: Callable[[WireEvent], None] | None,
    ):
        self.process = process
        self.modern = modern
        self.on_wire = on_wire
        self.notifications: list[JSONObject] = []
        self.server_info: JSONObject | None = None
        self._waiting: dict[RequestId, asyncio.Future[JSONObject]] = {}
        self._ids = itertools.count(1)
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(
        cls, argv: Sequence[str], *, modern: bool = False, on_wire: Callable[[WireEvent], None] | None = None
    ) -> AsyncIterator[StdioClient]:
        """Start the server, connect (handshake or discovery), and close it cleanly afterwards."""
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024
        )
        client = cls(process, modern=modern, on_wire=on_wire)
        try:
            await client.connect()
            yield client
        finally:
            await client.aclose()

    async def connect(self) -> JSONObject:
        if self.modern:
            result = await self.request("server/discover")
            self.server_info = result.get("_meta", {}).get("io.modelcontextprotocol/serverInfo")
            return result
        result = await self.request(
            "initialize",
            {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self.server_info = result.get("serverInfo")
        await self.notify("notifications/initialized")
        return result

    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        request_id = next(self._ids)
        if self.modern:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta.setdefault(PROTOCOL_VERSION_KEY, LATEST_MODERN_VERSION)
            meta.setdefault(CLIENT_CAPABILITIES_KEY, {})
            meta.setdefault("io.modelcontextprotocol/clientInfo", CLIENT_INFO)
            params["_meta"] = meta
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        await self._send(Request(request_id, method, params).to_json())
        response = await future
        if "error" in response:
            raise ServerError(response["error"])
        result: JSONObject = response["result"]
        return result

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        await self._send(Notification(method, params).to_json())

    async def call_tool(self, name: str, arguments: JSONObject) -> JSONObject:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def _send(self, message: JSONObject) -> None:
        data = orjson.dumps(message)
        if self.on_wire is not None:
            self.on_wire(WireEvent("send", time.time(), data))
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        await self.process.stdin.drain()

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            if self.on_wire is not None:
                self.on_wire(WireEvent("receive", time.time(), line.rstrip(b"\n")))
            message = orjson.loads(line)
            if "method" in message:
                self.notifications.append(message)
            elif (future := self._waiting.pop(message.get("id"), None)) is not None:
                future.set_result(message)
        closed = ConnectionError("the server closed its output")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(closed)

    async def aclose(self) -> None:
        """Close stdin (the stdio shutdown signal) and wait for the server to exit."""
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout=5)
        except TimeoutError:
            self.process.terminate()
            await self.process.wait()
        await self._reader
