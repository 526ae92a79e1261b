"""The Streamable HTTP endpoint: one URL, both protocol eras, as a raw ASGI app.

POST carries JSON-RPC. A request that names its version in `_meta` is served on its
own (2026-07-28); anything else belongs to a handshake-era session, minted by
`initialize` and named by `Mcp-Session-Id`. GET opens (or, with `Last-Event-ID`,
resumes) a session's SSE stream; DELETE ends the session. Every rule comes from
`herald.protocol`; this module moves bytes and maps refusals to status codes.
It is raw ASGI rather than Starlette requests because it is the hot path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from herald.protocol.codec import Batch, Outgoing, decode, error_id, error_response
from herald.protocol.errors import HeaderMismatch, ProtocolError, UnsupportedProtocolVersion
from herald.protocol.http import (
    MODERN_ERROR_STATUS,
    HTTPError,
    accepts,
    check_modern_headers,
    check_origin,
    check_post_headers,
    handshake_header_version,
)
from herald.protocol.messages import ErrorResponse, Notification, Request
from herald.protocol.modern import is_modern_request
from herald.protocol.sse import encode_comment, encode_event
from herald.protocol.versions import MODERN_VERSIONS, PROTOCOL_VERSION_KEY, is_at_least
from herald.server.app import Server
from herald.server.dispatch import respond
from herald.server.scope import RequestScope, modern_scope
from herald.stores.eventlog import EventLog
from herald.transports.http.asgi import (
    Receive,
    Scope,
    Send,
    end_body,
    read_body,
    send_body,
    send_empty,
    send_json,
    start_stream,
    wait_for_disconnect,
)
from herald.transports.http.config import HttpConfig
from herald.transports.http.listen import serve_listen
from herald.transports.http.sessions import HttpSession, SessionRegistry
from herald.transports.http.streams import (
    STANDALONE,
    DurableStream,
    NoReply,
    ResponseStream,
    event_id,
    parse_event_id,
)

logger = logging.getLogger("herald.http")

#: SEP-1699 priming events (an id and a `retry:` before any data) exist from this version on.
PRIMING_SINCE = "2025-11-25"


class MCPEndpoint:
    """The ASGI callable serving the MCP endpoint."""

    def __init__(self, server: Server, config: HttpConfig, sessions: SessionRegistry, log: EventLog) -> None:
        self.server = server
        self.config = config
        self.sessions = sessions
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        try:
            check_origin(headers, self.config.allowed_hosts)
            method = scope["method"]
            if method == "POST":
                await self._post(headers, receive, send)
            elif method == "GET":
                await self._get(headers, receive, send)
            elif method == "DELETE":
                await self._delete(headers, send)
            else:
                raise HTTPError(405, f"Method Not Allowed: {method}")
        except ProtocolError as exc:
            extra = [(b"allow", b"GET, POST, DELETE")] if exc.http_status == 405 else []
            await send_json(send, exc.http_status, error_response(error_id(exc), exc), extra)

    # -- POST -------------------------------------------------------------------------------------

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        check_post_headers(headers)
        body = await read_body(receive, headers, self.config.max_body_bytes)
        decoded = decode(body, max_bytes=self.config.max_body_bytes)
        if isinstance(decoded, Request) and is_modern_request(decoded.method, decoded.params):
            await self._post_modern(headers, decoded, receive, send)
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None and isinstance(decoded, Request) and decoded.method == "initialize":
            await self._initialize(decoded, send)
            return
        if session_id is None and _is_modern_notification(decoded, headers):
            # 2026-07-28 has no sessions: a notification (a client closing its subscription
            # sends notifications/cancelled) belongs to no exchange here and is accepted as is.
            await send_empty(send, 202)
            return
        session = self._session(session_id)
        handshake_header_version(headers)
        messages = decoded.items if isinstance(decoded, Batch) else (decoded,)
        requests = {message.id for message in messages if isinstance(message, Request)}
        if not requests:
            for message in messages:
                session.connection.receive_message(message)
            await send_empty(send, 202)
            return
        stream = ResponseStream(self.log, session.id, requests)
        if isinstance(decoded, Batch):
            session.connection.receive_batch(decoded, stream)
        else:
            session.connection.receive_message(decoded, stream)
        priming = is_at_least(session.protocol_version or "", PRIMING_SINCE)
        await self._answer(stream, send, receive, session=session, priming=priming)

    async def _initialize(self, request: Request, send: Send) -> None:
        session = self.sessions.create()
        replies = Collected()
        session.connection.receive_message(request, replies)
        reply = replies.messages[0]
        if isinstance(reply, ErrorResponse):
            await self.sessions.close(session.id)
            await send_json(send, 200, reply)
            return
        await send_json(send, 200, reply, [(b"mcp-session-id", session.id.encode())])

    async def _post_modern(
        self, headers: dict[str, str], request: Request, receive: Receive, send: Send
    ) -> None:
        stream = ResponseStream(None, "", {request.id})  # 2026-07-28 streams are not resumed
        try:
            request_scope = self._modern_scope(headers, request, stream)
            if request.method == "subscriptions/listen":
                await serve_listen(self.server, request_scope, receive, send, self.config.keepalive_interval)
                return
        except ProtocolError as exc:
            await send_json(send, exc.http_status, error_response(request.id, exc))
            return

        async def serve() -> None:
            stream.send(await respond(self.server, request_scope))

        task = asyncio.ensure_future(serve())
        # A modern request lives as long as its HTTP exchange: the client closing it cancels it.
        watcher = asyncio.ensure_future(wait_for_disconnect(receive))

        def client_left(_: object) -> None:
            task.cancel()
            stream.detach()

        watcher.add_done_callback(client_left)
        try:
            await self._answer(stream, send, receive, session=None, priming=False, watcher=watcher, task=task)
        finally:
            # This exchange owns the request, the watcher and the stream's pump: nothing outlives it.
            await _cancel_and_wait(task, watcher)
            await stream.aclose()

    def _modern_scope(
        self, headers: dict[str, str], request: Request, stream: ResponseStream
    ) -> RequestScope:
        """Check a modern request in the order clients rely on: envelope, version header, version, headers."""
        params = request.params or {}
        try:
            request_scope = modern_scope(request, stream)
        except UnsupportedProtocolVersion:
            body_version = params.get("_meta", {}).get(PROTOCOL_VERSION_KEY)
            if headers.get("mcp-protocol-version") != body_version:
                raise HeaderMismatch(
                    f"Header mismatch: MCP-Protocol-Version is {headers.get('mcp-protocol-version')!r} "
                    f"but the request says {body_version!r}"
                ) from None
            raise
        tool = (
            self.server.registry.tools.get(params.get("name", "")) if request.method == "tools/call" else None
        )
        schema = tool.input_schema if tool is not None else None
        check_modern_headers(headers, request.method, params, request_scope.version, schema)
        return request_scope

    async def _answer(
        self,
        stream: ResponseStream,
        send: Send,
        receive: Receive,
        *,
        session: HttpSession | None,
        priming: bool,
        watcher: asyncio.Future[None] | None = None,
        task: asyncio.Future[None] | None = None,
    ) -> None:
        """JSON if the first message is the whole answer, an SSE stream otherwise.

        With `task` (the request being served), a task that ends without a word (it was
        cancelled because the client left) ends the exchange too.
        """
        if task is not None:
            waiting: set[asyncio.Future[Any]] = {stream.first, task}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not stream.first.done():
                return
        first = await stream.first
        if isinstance(first, NoReply):  # every request was cancelled before it said a word
            await start_stream(send)
            await end_body(send)
            return
        if stream.answers_everything(first):
            status = _modern_status(first) if session is None else 200
            await send_json(send, status, first)
            return
        if session is not None:
            session.track(stream)
        live = stream.listen()
        stream.start_sse()
        await start_stream(send)
        if priming:
            priming_event = encode_event(
                b"", event_id=event_id(stream.name, 0), retry_ms=self.config.retry_ms
            )
            await send_body(send, priming_event)
        await self._relay(stream, live, None, send, receive, session, watcher)

    async def _relay(
        self,
        stream: DurableStream,
        live: asyncio.Queue[bytes],
        after: int | None,
        send: Send,
        receive: Receive,
        session: HttpSession | None,
        watcher: asyncio.Future[None] | None = None,
    ) -> None:
        """Send a stream's frames until it ends or the client goes away."""
        own_watcher = watcher is None
        if watcher is None:
            watcher = asyncio.ensure_future(wait_for_disconnect(receive))
            watcher.add_done_callback(lambda _: stream.detach(live))
        if session is not None:
            session.attached += 1
        try:
            async for frame in stream.frames(live, after, self.config.keepalive_interval):
                await send_body(send, frame if frame is not None else encode_comment("keep-alive"))
            await end_body(send)
        finally:
            if own_watcher:
                await _cancel_and_wait(watcher)
            if session is not None:
                session.attached -= 1

    # -- GET ----------------------------------------------------------------------------------------

    async def _get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        if "mcp-session-id" not in headers and headers.get("mcp-protocol-version") in MODERN_VERSIONS:
            raise HTTPError(405, "Method Not Allowed: GET has no meaning in protocol version 2026-07-28")
        if not accepts(headers, "text/event-stream"):
            raise HTTPError(406, "Not Acceptable: GET opens an event stream; accept text/event-stream")
        session = self._session(headers.get("mcp-session-id"))
        handshake_header_version(headers)
        resume = headers.get("last-event-id")
        if resume is None:
            if session.standalone.listening:
                raise HTTPError(409, "Conflict: this session already has an open GET stream")
            stream: DurableStream | None = session.standalone
            after: int | None = session.standalone.delivered
        else:
            parsed = parse_event_id(resume)
            if parsed is None:
                raise HTTPError(400, f"Bad Request: {resume!r} is not an event id of this server")
            name, after = parsed
            stream = session.standalone if name == STANDALONE else session.streams.get(name)
            if stream is None:  # the stream has ended: what it said is all in the log
                await self._replay_finished(session, name, after, send)
                return
        assert stream is not None
        live = stream.listen()
        if stream is session.standalone:
            session.standalone.start()
        await start_stream(send)
        await self._relay(stream, live, after, send, receive, session)

    async def _replay_finished(self, session: HttpSession, name: str, after: int, send: Send) -> None:
        await start_stream(send)
        for stored in await self.log.read_after(session.id, name, after):
            await send_body(send, encode_event(stored.data, event_id=event_id(name, stored.position)))
        await end_body(send)

    # -- DELETE -------------------------------------------------------------------------------------

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        if "mcp-session-id" not in headers and headers.get("mcp-protocol-version") in MODERN_VERSIONS:
            raise HTTPError(405, "Method Not Allowed: there are no sessions in protocol version 2026-07-28")
        session = self._session(headers.get("mcp-session-id"))
        await self.sessions.close(session.id)
        await send_empty(send, 200)

    def _session(self, session_id: str | None) -> HttpSession:
        if session_id is None:
            raise HTTPError(400, "Bad Request: the Mcp-Session-Id header is required after initialize")
        session = self.sessions.get(session_id)
        if session is None:
            raise HTTPError(404, "Not Found: unknown or expired session; send initialize to start a new one")
        return session


class Collected:
    """An outbox that keeps what it is sent (for `initialize`, answered on the spot)."""

    def __init__(self) -> None:
        self.messages: list[Outgoing] = []

    def send(self, message: Outgoing) -> None:
        self.messages.append(message)

    async def drain(self) -> None:
        return None


async def _cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel tasks this exchange started and wait until they have ended."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def _is_modern_notification(decoded: object, headers: dict[str, str]) -> bool:
    """A 2026-07-28 notification: by its `_meta` version, or the version header it came with."""
    if not isinstance(decoded, Notification):
        return False
    return (
        is_modern_request(decoded.method, decoded.params)
        or headers.get("mcp-protocol-version") in MODERN_VERSIONS
    )


def _modern_status(message: Outgoing) -> int:
    if isinstance(message, ErrorResponse):
        return MODERN_ERROR_STATUS.get(message.code, 200)
    return 200
