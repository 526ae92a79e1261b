"""An MCP client over Streamable HTTP, for both eras.

Handshake era: `initialize` mints a session (`Mcp-Session-Id`), and a background task
keeps the session's standalone GET stream open, because that is where the server sends
what it starts on its own, job events included. When that stream ends or fails, the
task opens it again with `Last-Event-ID`, so the server replays what was missed; when
the server no longer knows the session (404, e.g. after a restart), the client
initializes a new one. Modern era (2026-07-28): there is no session and no stream;
every POST carries the version in `_meta` and mirrors it in headers, and jobs are
followed by polling alone.

Redirects are followed only within the endpoint's origin and when they keep the method
(`herald.client.redirects`), as the official SDK's transports do.

A POST is answered with JSON or with an SSE stream that ends after the reply; messages
other than the reply that come on it are handled like those of the GET stream. The
client sends one request per POST, so an error response on a POST's answer is that
request's error even when its id is null (a 413, say): nothing is left waiting.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable
from typing import Final

import httpx
import orjson

from herald.client.base import BACKOFF_MAX, BACKOFF_START, Client, ConnectionLost, ServerError
from herald.client.redirects import stream_within_origin, unfollowed_redirect
from herald.client.stdio import CLIENT_INFO, WireEvent
from herald.protocol.http import NAME_FIELDS
from herald.protocol.messages import JSONObject, Notification, Request, RequestId
from herald.protocol.modern import with_envelope
from herald.protocol.sse import SSEDecoder
from herald.protocol.versions import (
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
)
from herald.taskgroup import task_group

__all__ = ["HttpClient", "SessionLost", "connect_http"]

ACCEPT: Final = "application/json, text/event-stream"
#: Connect and write limits; reads are unbounded on streams (they idle between events by design).
TIMEOUT: Final = httpx.Timeout(30.0, read=None)
#: Statuses a gateway answers, with a page of its own, when no server is behind it (a
#: balancer while replicas restart). A JSON-RPC error with one of them is the server's own.
GATEWAY_UNAVAILABLE: Final = frozenset({502, 503, 504})


class SessionLost(ConnectionLost):
    """The server does not know this session (it expired, or the server restarted)."""


class NotJsonRpc(ServerError):
    """What answered is not an MCP server: a page or JSON of some other kind (its HTTP status is the code)."""


class HttpClient(Client):
    """One MCP endpoint over HTTP. Use `connect_http(...)`, which connects and closes it."""

    def __init__(
        self,
        url: str,
        *,
        modern: bool = False,
        http: httpx.AsyncClient | None = None,
        on_wire: Callable[[WireEvent], None] | None = None,
        reconnect_timeout: float = 30.0,
        listen: bool = True,
        tasks: asyncio.TaskGroup,
    ) -> None:
        super().__init__(modern=modern, reconnect_timeout=reconnect_timeout)
        #: The GET stream's listener is a task of the `connect_http` block.
        self._tasks = tasks
        self.url = url
        self.on_wire = on_wire
        #: Whether to keep the session's GET stream open (handshake era only).
        self.listen = listen and not modern
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        #: Set while the GET stream is open; cleared when it drops.
        self.stream_open = asyncio.Event()
        self._own_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=TIMEOUT)
        self._ids = itertools.count(1)
        self._last_event_id: dict[str, str] = {}  # session id -> last id seen on its GET stream
        self._listener: asyncio.Task[None] | None = None

    # -- opening ------------------------------------------------------------------------------------

    async def _reopen(self) -> JSONObject:
        if self.modern:
            result = await self.request("server/discover")
            self.server_info = result.get("_meta", {}).get("io.modelcontextprotocol/serverInfo")
            return result
        self.session_id = None
        params: JSONObject = {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        request_id = next(self._ids)
        reply, headers = await self._post(Request(request_id, "initialize", params).to_json(), request_id)
        result = _result(reply)
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            raise ServerError(
                {"code": 0, "message": "the server answered initialize without an Mcp-Session-Id"}
            )
        self.session_id = session_id
        self.protocol_version = result.get("protocolVersion")
        self.server_info = result.get("serverInfo")
        await self.notify("notifications/initialized")
        if self.listen and self._listener is None:
            self._listener = self._tasks.create_task(self._listen())
        return result

    # -- requests -------------------------------------------------------------------------------------

    async def _request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        if self.modern:
            params = with_envelope(params, capabilities={}, client_info=CLIENT_INFO)
        request_id = next(self._ids)
        reply, _ = await self._post(Request(request_id, method, params).to_json(), request_id)
        return _result(reply)

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification (handshake era); the server accepts it with 202."""
        await self._post(Notification(method, params).to_json(), None)

    def _headers(self, message: JSONObject) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": ACCEPT}
        if self.modern:
            method = str(message.get("method"))
            params = message.get("params") or {}
            headers["mcp-protocol-version"] = LATEST_MODERN_VERSION
            headers["mcp-method"] = method
            field = NAME_FIELDS.get(method)
            if field is not None and isinstance(params.get(field), str):
                headers["mcp-name"] = _header_value(params[field])
        elif self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = self.protocol_version or LATEST_HANDSHAKE_VERSION
        return headers

    async def _post(
        self, message: JSONObject, request_id: RequestId | None
    ) -> tuple[JSONObject, httpx.Headers]:
        """POST one message; for a request, return its reply (from JSON or from the SSE answer)."""
        data = orjson.dumps(message)
        self._wire("send", data)
        headers = self._headers(message)
        try:
            async with stream_within_origin(
                self._http, "POST", self.url, content=data, headers=headers
            ) as response:
                if response.status_code == 404 and "mcp-session-id" in headers:
                    raise SessionLost(f"the server does not know session {headers['mcp-session-id']}")
                if (redirected := unfollowed_redirect(response)) is not None:
                    await response.aread()
                    status = response.status_code
                    raise NotJsonRpc({"code": status, "message": redirected}, http_status=status)
                if request_id is None:
                    await response.aread()
                    if response.status_code >= 400:
                        raise ServerError({"code": response.status_code, "message": response.text})
                    return {}, response.headers
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    reply = await self._read_stream(response, request_id)
                    if reply is None:
                        raise ConnectionLost(f"the answer to request {request_id} ended before its reply")
                    return reply, response.headers
                body = await response.aread()
                self._wire("receive", body)
                try:
                    return _reply(body, response.status_code), response.headers
                except NotJsonRpc as error:
                    if response.status_code in GATEWAY_UNAVAILABLE:
                        # A proxy with no live server behind it: the server is away, as
                        # when a connection is refused, and a retry may find one.
                        raise ConnectionLost(f"HTTP {response.status_code}: {error.message}") from error
                    raise
        except httpx.TransportError as exc:
            raise ConnectionLost(f"{type(exc).__name__}: {exc}") from exc

    async def _read_stream(self, response: httpx.Response, request_id: RequestId | None) -> JSONObject | None:
        """Handle a stream's messages; return the reply to `request_id` (None: the stream ended first)."""
        decoder = SSEDecoder()
        session_id = self.session_id
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                if request_id is None and event.id is not None and session_id is not None:
                    self._last_event_id[session_id] = event.id
                if not event.data:
                    continue  # a priming event: an id to resume from, nothing to handle
                self._wire("receive", event.data.encode())
                message = _reply(event.data.encode(), response.status_code, streamed=True)
                if "method" in message:
                    self._received(message)
                elif request_id is not None and (message.get("id") == request_id or "error" in message):
                    return message  # the POST's only request: an error on its stream is about it
                elif "error" in message:
                    self.unpaired_errors.append(message)  # on the GET stream no request waits
        return None

    # -- the session's GET stream ---------------------------------------------------------------------

    async def _listen(self) -> None:
        """Keep the standalone stream open for as long as the client lives, resuming where it broke."""
        delay = BACKOFF_START
        while True:
            generation, session_id = self.generation, self.session_id
            try:
                if session_id is not None:
                    await self._open_stream(session_id)
                    delay = BACKOFF_START  # it worked, then ended: reopen promptly
            except SessionLost:
                self._stream_dropped()
                with contextlib.suppress(ConnectionLost):
                    await self.reconnect(generation)
                continue
            except (ConnectionLost, httpx.TransportError):
                pass
            self._stream_dropped()
            await asyncio.sleep(delay)  # backoff between attempts to reopen
            delay = min(delay * 2, BACKOFF_MAX)

    async def _open_stream(self, session_id: str) -> None:
        headers = {
            "accept": "text/event-stream",
            "mcp-session-id": session_id,
            "mcp-protocol-version": self.protocol_version or LATEST_HANDSHAKE_VERSION,
        }
        if (last := self._last_event_id.get(session_id)) is not None:
            headers["last-event-id"] = last
        async with stream_within_origin(self._http, "GET", self.url, headers=headers) as response:
            if response.status_code == 404:
                raise SessionLost(f"the server does not know session {session_id}")
            if response.status_code != 200:
                await response.aread()
                raise ConnectionLost(f"GET stream refused: {response.status_code} {response.text}")
            self.stream_open.set()
            await self._read_stream(response, None)

    def _stream_dropped(self) -> None:
        if self.stream_open.is_set():
            self.stream_open.clear()
        self._dropped()

    # -- closing ----------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop listening, end the session (DELETE), and close the HTTP client if it is ours."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        if self.session_id is not None:
            headers = {
                "mcp-session-id": self.session_id,
                "mcp-protocol-version": self.protocol_version or LATEST_HANDSHAKE_VERSION,
            }
            with contextlib.suppress(httpx.HTTPError):
                async with stream_within_origin(self._http, "DELETE", self.url, headers=headers) as response:
                    await response.aread()
        if self._own_http:
            await self._http.aclose()

    def _wire(self, direction: str, data: bytes) -> None:
        if self.on_wire is not None:
            self.on_wire(WireEvent("send" if direction == "send" else "receive", time.time(), data))


def _reply(body: bytes, status: int, *, streamed: bool = False) -> JSONObject:
    """The JSON-RPC message in `body`; `ServerError` for anything else that answered.

    What answers at a URL is not always an MCP server (a wrong path, a proxy, an OAuth
    gate answering `{"error": "invalid_token"}`): its reply becomes an error that says what
    came back, never a `KeyError` deep in the client. A POST carries one request, so an
    error on it is this request's, id or not (a 413 is answered before the body is read,
    with a null id).
    """
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), dict) and not streamed:
        raise ServerError(decoded["error"], http_status=status)
    if isinstance(decoded, dict) and (
        "method" in decoded or "result" in decoded or isinstance(decoded.get("error"), dict)
    ):
        return decoded
    text = body.decode(errors="replace").strip()
    raise NotJsonRpc({"code": status, "message": f"not a JSON-RPC message: {text[:300]}"}, http_status=status)


def _result(reply: JSONObject) -> JSONObject:
    if "error" in reply:
        raise ServerError(reply["error"])
    result: JSONObject = reply["result"]
    return result


def _header_value(value: str) -> str:
    """A header-safe form of `value`: as is when plain visible ASCII, else `=?base64?…?=`."""
    if value.isascii() and value.isprintable() and value == value.strip():
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    modern: bool = False,
    *,
    http: httpx.AsyncClient | None = None,
    on_wire: Callable[[WireEvent], None] | None = None,
    reconnect_timeout: float = 30.0,
    listen: bool = True,
) -> AsyncIterator[HttpClient]:
    """Connect to the MCP endpoint at `url` in the chosen era; end the session on exit.

    Pass `http` to share an `httpx.AsyncClient` (it is then not closed here); `listen=False`
    skips the handshake-era GET stream, leaving jobs to polling.
    """
    async with task_group() as tasks:
        client = HttpClient(
            url,
            modern=modern,
            http=http,
            on_wire=on_wire,
            reconnect_timeout=reconnect_timeout,
            listen=listen,
            tasks=tasks,
        )
        try:
            await client.connect()
            yield client
        finally:
            await client.aclose()
