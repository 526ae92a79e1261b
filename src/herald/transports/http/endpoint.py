"""The Streamable HTTP endpoint: one URL, both protocol eras, as a raw ASGI app.

POST carries JSON-RPC. A request that names its version in `_meta` is served on its
own (2026-07-28); anything else belongs to a handshake-era session, minted by
`initialize` and named by `Mcp-Session-Id`. GET opens (or, with `Last-Event-ID`,
resumes) a session's SSE stream, or shows a browser a page about the server
(`herald.transports.http.page`); DELETE ends the session. Every rule comes from
`herald.protocol`; this module moves bytes and maps refusals to status codes.
It is raw ASGI rather than Starlette requests because it is the hot path.
"""

from __future__ import annotations

import asyncio
import logging

import herald.telemetry
from herald.protocol.codec import Batch, Outgoing, decode, error_id, error_response
from herald.protocol.connection import refused_whole, reply_ids
from herald.protocol.errors import ProtocolError
from herald.protocol.hosts import HostAllowList, check_host_and_origin
from herald.protocol.http import (
    MODERN_ERROR_STATUS,
    HTTPError,
    PostRoute,
    check_delete,
    check_get,
    check_post_headers,
    handshake_header_version,
    primes,
    require_session_id,
    route_post,
)
from herald.protocol.messages import ErrorResponse, Message, Request, RequestId
from herald.protocol.sse import encode_comment, encode_event
from herald.server.app import Server
from herald.server.connection import Connection
from herald.server.outbox import Outbox
from herald.server.principal import Principal, signed_in
from herald.stores.errors import StoreError, StoreUnavailable
from herald.stores.eventlog import EventLog
from herald.taskgroup import task_group
from herald.transports.http.asgi import (
    RETRY_AFTER_SECONDS,
    TARGET_AUTHORITY,
    Receive,
    Scope,
    Send,
    end_body,
    read_body,
    request_headers,
    send_body,
    send_empty,
    send_html,
    send_json,
    start_stream,
    wait_for_disconnect,
)
from herald.transports.http.auth import Gate, Refused
from herald.transports.http.config import HttpConfig
from herald.transports.http.page import PAGE_HEADERS, endpoint_url, render_page, wants_page
from herald.transports.http.sessions import HttpSession, SessionRegistry
from herald.transports.http.streams import (
    STANDALONE,
    DurableStream,
    NoReply,
    ResponseStream,
    event_id,
    resume_point,
    stored_frames,
)
from herald.transports.http.unread import UnreadFrames

logger = logging.getLogger("herald.http")


class MCPEndpoint:
    """The ASGI callable serving the MCP endpoint."""

    def __init__(
        self,
        server: Server,
        config: HttpConfig,
        sessions: SessionRegistry,
        log: EventLog,
        gate: Gate | None = None,
    ) -> None:
        self.server = server
        self.config = config
        self.sessions = sessions
        self.log = log
        self.hosts = HostAllowList.parse(config.allowed_hosts)
        #: Checks each request's access token, where the server asks for one.
        self.gate = gate
        self._said_not_started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._serve(scope, receive, send)
        except StoreUnavailable as exc:
            await self._refuse(send, exc, exc.request_id)
        except ProtocolError as exc:
            await self._refuse(send, exc, error_id(exc))
        except StoreError:  # the session registry has logged it
            await self._refuse(send, StoreUnavailable("The server could not serve this request"), None)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.server.lifespan_running:
            raise self._not_started()
        headers = request_headers(scope)
        self._check_origin(headers, scope)
        method = scope["method"]
        if method == "GET" and wants_page(headers):
            page = render_page(self.server, endpoint_url(scope, self.config.path))
            await send_html(send, page, PAGE_HEADERS)
            return
        # Without a token, where some tool is public: the messages are checked one by one
        # (`_check_anonymous`), and a session is reached only if it was opened without one.
        principal = None
        if self.gate is not None and ("authorization" in headers or not self.server.scopes.public):
            principal = await self.gate.principal(headers)
        if method == "POST":
            await self._post(headers, receive, send, principal, peer_of(scope))
        elif method == "GET":
            await self._get(headers, receive, send, principal)
        elif method == "DELETE":
            await self._delete(headers, send, principal)
        else:
            raise HTTPError(405, f"Method Not Allowed: {method}")

    def _not_started(self) -> HTTPError:
        """The app's lifespan never ran: mounted in another app that did not run it, most likely.

        Without it nothing runs jobs or keeps sessions, so every request is refused, and
        the log says how to mend it (once: a client retrying must not flood it).
        """
        if not self._said_not_started:
            self._said_not_started = True
            logger.error(
                "the MCP app's lifespan has not run, so it refuses requests; mounted in another app, "
                "pass it to that app: FastAPI(lifespan=mcp_app.lifespan), or enter "
                "mcp_app.lifespan(app) inside the host app's own lifespan"
            )
        return HTTPError(
            503,
            "Service Unavailable: the MCP server has not started (its app's lifespan did not run)",
        )

    async def _refuse(self, send: Send, exc: ProtocolError, request_id: RequestId | None) -> None:
        """Answer a refusal: its status, and a JSON-RPC error that says why."""
        extra = [(b"allow", b"GET, POST, DELETE")] if exc.http_status == 405 else []
        if exc.http_status in (429, 503):
            extra.append((b"retry-after", b"%d" % RETRY_AFTER_SECONDS))
        if isinstance(exc, Refused):
            extra.append((b"www-authenticate", exc.challenge.encode()))
        await send_json(send, exc.http_status, error_response(request_id, exc), extra)

    def _check_stream_slot(self, session: HttpSession) -> None:
        """429 unless one of the session's `max_streams_per_session` answers or streams is free.

        The caller takes it (`open_streams += 1`) with no await between, and gives it back
        (`open_streams -= 1`) when its answer or stream ends.
        """
        if session.open_streams >= self.config.max_streams_per_session:
            raise HTTPError(
                429,
                f"Too Many Requests: this session has {session.open_streams} requests or streams open, "
                "the most it may; wait for one to end",
            )

    def _check_origin(self, headers: dict[str, str], scope: Scope) -> None:
        """`check_host_and_origin`, where an origin listed in `cors_origins` counts as allowed.

        The Host must still name an allowed host: that is what stops DNS rebinding, since a
        page on a rebound name sends its own name as the Host. An absolute-form request
        target (`POST http://name/mcp`) names the host the client meant, and is held to the
        same list (`herald.transports.http.protocol` keeps it in the scope).
        """
        if headers.get("origin", "") in self.config.cors_origins:
            headers = {name: value for name, value in headers.items() if name != "origin"}
        check_host_and_origin(headers, self.hosts, target_authority=scope.get(TARGET_AUTHORITY))

    # -- POST -------------------------------------------------------------------------------------

    async def _post(
        self,
        headers: dict[str, str],
        receive: Receive,
        send: Send,
        principal: Principal | None,
        peer: str | None,
    ) -> None:
        check_post_headers(headers)
        body = await read_body(receive, headers, self.config.max_body_bytes)
        decoded = decode(body, max_bytes=self.config.max_body_bytes)
        if principal is not None:
            self._check_scopes(decoded, principal)
        elif self.gate is not None:
            self._check_anonymous(decoded)
        route = route_post(decoded, headers)
        if route is PostRoute.MODERN_REQUEST:
            assert isinstance(decoded, Request)
            await self._post_modern(headers, decoded, receive, send, principal, peer)
            return
        if route is PostRoute.INITIALIZE:
            assert isinstance(decoded, Request)
            await self._initialize(decoded, send, principal, peer, headers)
            return
        if route is PostRoute.MODERN_NOTIFICATION:
            await send_empty(send, 202)
            return
        session = await self._session(headers, principal)
        handshake_header_version(headers)
        if isinstance(decoded, Request | Batch):  # may be answered: refused now, or never taken in
            self._check_stream_slot(session)
        # A session may move between addresses (a phone between networks): admission counts its
        # requests by where each came from.
        session.connection.peer = peer
        # What the message means, and so what its answer carries, is the connection's to say.
        event = session.connection.interpret(decoded, carrier=headers)
        awaited = reply_ids(event)
        if not awaited:
            session.connection.act(event)
            await self.sessions.persist_if_possible(session)  # `initialized`, on any replica from now on
            await send_empty(send, 202)
            return
        session.open_streams += 1
        try:
            stream = session.response_stream(set(awaited))
            session.connection.act(event, stream, principal)
            await self._answer(stream, send, receive, session=session, refused=refused_whole(event))
        finally:
            session.open_streams -= 1

    async def _initialize(
        self,
        request: Request,
        send: Send,
        principal: Principal | None,
        peer: str | None,
        headers: dict[str, str],
    ) -> None:
        session = self.sessions.create(owner=principal.owner if principal is not None else None)
        session.connection.peer = peer
        replies = Collected()
        session.connection.receive_message(request, replies, principal=principal, carrier=headers)
        reply = replies.messages[0]
        if isinstance(reply, ErrorResponse):
            await self.sessions.discard(session.id)
            await send_json(send, 200, reply)
            return
        try:
            await self.sessions.persist(session)  # a session no replica could find is no session
        except StoreError as refused:
            await self.sessions.discard(session.id)
            raise StoreUnavailable("The server could not start a session", request_id=request.id) from refused
        await send_json(send, 200, reply, [(b"mcp-session-id", session.id.encode())])

    async def _post_modern(
        self,
        headers: dict[str, str],
        request: Request,
        receive: Receive,
        send: Send,
        principal: Principal | None,
        peer: str | None,
    ) -> None:
        """A 2026-07-28 request lives exactly as long as its HTTP exchange.

        It goes through a connection of its own, like every other request; that
        connection's task group owns the request's task, the disconnect watcher and the
        stream's pump, and the client closing the exchange cancels the request.
        """
        # 2026-07-28 streams are not resumed: nothing is logged. The pump is the connection's.
        stream = ResponseStream(None, "", {request.id}, spawn=lambda pump: connection.spawn(pump))
        connection = Connection(self.server, stream, follows_server=False, peer=peer, transport="tcp")
        async with connection:
            connection.receive_message(request, stream, headers, principal)
            watcher = connection.spawn(wait_for_disconnect(receive))

            def client_left(_: object) -> None:
                connection.cancel_requests()
                stream.detach()

            watcher.add_done_callback(client_left)
            # Nothing of it can be resumed: a listener cut off for reading nothing ends the request.
            stream.on_cut = connection.cancel_requests
            try:
                await self._answer(stream, send, receive, session=None, watcher=watcher)
            finally:
                # The pump ends on the stream's close, before the group awaits it.
                watcher.cancel()
                connection.cancel_requests()
                await stream.aclose()

    async def _answer(
        self,
        stream: ResponseStream,
        send: Send,
        receive: Receive,
        *,
        session: HttpSession | None,
        watcher: asyncio.Task[None] | None = None,
        refused: bool = False,
    ) -> None:
        """JSON if the first message is the whole answer, an SSE stream otherwise.

        `refused`: nothing of the POST was taken in (`refused_whole`), and the answer says
        why with status 400, as the transport answers input the server cannot accept.
        """
        first = await stream.first
        if session is not None:  # what the request changed holds before the client hears of it
            await self.sessions.persist_if_possible(session)
        if isinstance(first, NoReply):  # every request was cancelled before it said a word
            await start_stream(send)
            await end_body(send)
            return
        if stream.answers_everything(first):
            status = _modern_status(first) if session is None else 400 if refused else 200
            await send_json(send, status, first)
            return
        if session is not None:
            session.track(stream)
        live = stream.listen()
        stream.start_sse()
        await start_stream(send)
        if session is not None and primes(session.protocol_version):
            priming_event = encode_event(
                b"", event_id=event_id(stream.name, 0), retry_ms=self.config.retry_ms
            )
            await send_body(send, priming_event)
        await self._relay(stream, live, None, send, receive, session, watcher)
        if session is not None:
            await self.sessions.persist_if_possible(session)

    async def _relay(
        self,
        stream: DurableStream,
        live: UnreadFrames,
        after: int | None,
        send: Send,
        receive: Receive,
        session: HttpSession | None,
        watcher: asyncio.Task[None] | None = None,
    ) -> None:
        """Send a stream's frames until it ends or the client goes away.

        Without a `watcher` of the exchange's own, this response watches for the client
        leaving in a task of its own group, so the task ends with the response.
        """
        async with task_group() as tasks:
            own_watcher = watcher is None
            if watcher is None:
                watcher = tasks.create_task(wait_for_disconnect(receive))
                watcher.add_done_callback(lambda _: stream.detach(live))
            if session is not None:
                session.attached += 1
            if (telemetry := herald.telemetry.active) is not None:
                telemetry.streams_changed(1)
            try:
                async for frame in stream.frames(live, after, self.config.keepalive_interval):
                    await send_body(send, frame if frame is not None else encode_comment("keep-alive"))
                await end_body(send)
            finally:
                if own_watcher:
                    watcher.cancel()
                if session is not None:
                    session.attached -= 1
                if telemetry is not None:
                    telemetry.streams_changed(-1)

    # -- GET ----------------------------------------------------------------------------------------

    async def _get(
        self, headers: dict[str, str], receive: Receive, send: Send, principal: Principal | None
    ) -> None:
        check_get(headers)
        session = await self._session(headers, principal)
        handshake_header_version(headers)
        self._check_stream_slot(session)
        session.open_streams += 1
        try:
            await self._open_stream(session, headers, receive, send)
        finally:
            session.open_streams -= 1

    async def _open_stream(
        self, session: HttpSession, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        resume = headers.get("last-event-id")
        if resume is None:
            if session.standalone.listening:
                raise HTTPError(409, "Conflict: this session already has an open GET stream")
            stream: DurableStream | None = session.standalone
            after: int | None = None
        else:
            parsed = await resume_point(self.log, session.id, resume)
            if parsed is None:
                raise HTTPError(400, f"Bad Request: {resume!r} is not an event id of this server")
            name, after = parsed
            stream = session.standalone if name == STANDALONE else session.streams.get(name)
            if stream is None:  # the stream has ended: what it said is all in the log
                await self._replay_finished(session, name, after, send)
                return
        assert stream is not None
        if stream is session.standalone:
            live, after = await session.standalone.attach(after, session.connection.owner_id)
        else:
            assert after is not None  # a POST's stream is only ever resumed
            live = stream.listen()
        await start_stream(send)
        await self._relay(stream, live, after, send, receive, session)

    async def _replay_finished(self, session: HttpSession, name: str, after: int, send: Send) -> None:
        await start_stream(send)
        if stored := await self.log.read_after(session.id, name, after):
            await send_body(send, await stored_frames(stored, name, session.standalone.jobs))
        await end_body(send)

    # -- DELETE -------------------------------------------------------------------------------------

    async def _delete(self, headers: dict[str, str], send: Send, principal: Principal | None) -> None:
        check_delete(headers)
        session = await self._session(headers, principal)
        try:
            await self.sessions.close(session.id)
        except StoreError as refused:
            raise StoreUnavailable("The server could not end the session") from refused
        await send_empty(send, 200)

    async def _session(self, headers: dict[str, str], principal: Principal | None) -> HttpSession:
        """The request's session; another principal's session is answered as an unknown one."""
        session = await self.sessions.get(require_session_id(headers))
        owner = None if session is None else session.connection.owner_id
        if session is None or (owner != principal.owner if principal is not None else signed_in(owner)):
            raise HTTPError(404, "Not Found: unknown or expired session; send initialize to start a new one")
        return session

    def _check_anonymous(self, decoded: Message | Batch) -> None:
        """401 for a message without a token that asks what only a signed-in caller may."""
        assert self.gate is not None
        scopes = self.server.scopes
        for message in decoded.items if isinstance(decoded, Batch) else (decoded,):
            method = getattr(message, "method", None)
            if method is None or scopes.anonymous_may(method) or method.startswith("notifications/"):
                continue
            params = getattr(message, "params", None) or {}
            if method == "resources/read" and params.get("uri") in scopes.public_widgets(
                self.server.registry
            ):
                continue  # a public tool's widget, which the guest's host shows its results in
            raise self.gate.refuse_anonymous(method)

    def _check_scopes(self, decoded: Message | Batch, principal: Principal) -> None:
        """403 before anything runs when the token lacks a scope what the message asks for needs."""
        assert self.gate is not None
        for message in decoded.items if isinstance(decoded, Batch) else (decoded,):
            if isinstance(message, Request):
                self.gate.require(
                    principal,
                    self.server.scopes.required(self.server.registry, message.method, message.params),
                )


class Collected(Outbox):
    """An outbox that keeps what it is sent (for `initialize`, answered on the spot)."""

    def __init__(self) -> None:
        self.messages: list[Outgoing] = []

    def send(self, message: Outgoing) -> None:
        self.messages.append(message)

    async def drain(self) -> None:
        return None


def _modern_status(message: Outgoing) -> int:
    if isinstance(message, ErrorResponse):
        return MODERN_ERROR_STATUS.get(message.code, 200)
    return 200


def peer_of(scope: Scope) -> str | None:
    """The client's network address, as the ASGI server saw it (None where it has none).

    Behind a proxy this is the proxy's: run uvicorn with `--forwarded-allow-ips` for the
    client's own, which uvicorn then puts here from `X-Forwarded-For`.
    """
    client = scope.get("client")
    return str(client[0]) if client else None
