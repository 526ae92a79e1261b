"""One client's handshake-era session, fed message by message by a transport.

The connection applies the handshake session table, reads the modern envelope of
requests that carry one, and serves every request in its own task so a slow tool
never blocks `ping`. It owns no I/O: messages come in through `receive_data` or
`receive_message` together with the `Outbox` their answers belong on (stdio has one
for everything; HTTP has one per POST stream), and server-initiated messages leave
through the connection's own outbox (stdout, or the session's GET stream).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from typing import TYPE_CHECKING, Any

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES, Batch, decode, error_id, error_response
from herald.protocol.errors import InvalidRequest, ProtocolError
from herald.protocol.messages import ErrorResponse, Message, Notification, Request, RequestId, Response
from herald.protocol.modern import is_modern_request
from herald.protocol.session import HandshakeSession, SessionInput, Verdict, classify
from herald.protocol.validation import validate_notification_params, validate_request_params
from herald.protocol.versions import BATCH_VERSIONS, LATEST_HANDSHAKE_VERSION, negotiate
from herald.server.dispatch import error_reply, respond
from herald.server.inputs import ClientRequester
from herald.server.outbox import Outbox
from herald.server.scope import ClientSession, RequestScope, modern_scope

if TYPE_CHECKING:
    from herald.server.app import Server

logger = logging.getLogger("herald.connection")

#: Until the client calls `logging/setLevel`, log messages at this level and above go out.
DEFAULT_LOG_LEVEL = "info"

_REFUSALS = {
    Verdict.REFUSE_NOT_INITIALIZED: (
        "Session not initialized: send 'initialize' first (only 'ping' is allowed before it)"
    ),
    Verdict.REFUSE_ALREADY_INITIALIZED: "Session already initialized: 'initialize' may be sent only once",
    Verdict.REFUSE_CLOSED: "Session closed",
}

Reply = Response | ErrorResponse

#: Methods whose requests stay open until the client cancels them.
ENDLESS_METHODS = frozenset({"subscriptions/listen"})


class ClientError(Exception):
    """The client answered one of our requests with an error."""

    def __init__(self, error: dict[str, Any]):
        super().__init__(f"the client answered with error {error.get('code')}: {error.get('message')}")
        self.error = error


class Connection:
    """Serves one client: both eras, concurrent requests, cancellation, orderly close."""

    def __init__(
        self,
        server: Server,
        outbox: Outbox,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        owner_id: str | None = None,
    ):
        self.server = server
        self.outbox = outbox
        self.max_message_bytes = max_message_bytes
        self.handshake = HandshakeSession()
        self.session: ClientSession | None = None
        self._in_flight: dict[RequestId, asyncio.Future[Reply | None]] = {}
        self._batch_replies: set[asyncio.Task[None]] = set()
        #: Requests that run until cancelled (subscriptions): closing ends them instead of waiting.
        self._endless: set[RequestId] = set()
        self._awaiting_client: dict[RequestId, asyncio.Future[dict[str, Any]]] = {}
        self._request_ids = itertools.count(1)
        self._stop_listening = server.add_listener(self._on_server_notification)
        #: Jobs started on this connection report their events here.
        self.owner_id = owner_id or secrets.token_hex(8)
        self._stop_job_events = server.add_job_listener(self._on_job_event, owner=self.owner_id)

    # -- input -----------------------------------------------------------------------------

    def receive_data(self, data: bytes, outbox: Outbox | None = None) -> None:
        """Handle one frame: a message, or a batch where the session allows batches."""
        outbox = outbox or self.outbox
        try:
            decoded = decode(data, max_bytes=self.max_message_bytes)
        except ProtocolError as exc:
            outbox.send(error_response(error_id(exc), exc))
            return
        if isinstance(decoded, Batch):
            self.receive_batch(decoded, outbox)
        else:
            self.receive_message(decoded, outbox)

    def receive_message(self, message: Message, outbox: Outbox | None = None) -> None:
        outbox = outbox or self.outbox
        if isinstance(message, Request):
            self._receive_request(message, outbox)
        elif isinstance(message, Notification):
            self._receive_notification(message)
        else:
            self._receive_client_answer(message)

    def receive_batch(self, batch: Batch, outbox: Outbox | None = None) -> None:
        outbox = outbox or self.outbox
        version = self.session.protocol_version if self.session else None
        if version not in BATCH_VERSIONS:
            refusal = InvalidRequest(
                f"JSON-RPC batches are not supported in protocol version {version or 'before initialize'}; "
                "they are allowed only on a 2025-03-26 session"
            )
            outbox.send(error_response(None, refusal))
            return
        replies: list[asyncio.Future[Reply | None]] = []
        for item in batch.items:
            if isinstance(item, ErrorResponse) and item.error["code"] == InvalidRequest.code:
                replies.append(_done(item))
            elif isinstance(item, Request):
                replies.append(self._start_request(item, outbox))
            else:
                self.receive_message(item, outbox)
        if replies:
            task = asyncio.ensure_future(self._send_batch_reply(replies, outbox))
            self._batch_replies.add(task)
            task.add_done_callback(self._batch_replies.discard)

    async def _send_batch_reply(self, replies: list[asyncio.Future[Reply | None]], outbox: Outbox) -> None:
        answered = await asyncio.gather(*replies)
        found = tuple(reply for reply in answered if reply is not None)
        if found:
            outbox.send(found)

    def _receive_request(self, request: Request, outbox: Outbox) -> None:
        future = self._start_request(request, outbox, send_reply=True)
        if future.done() and (reply := future.result()) is not None:
            outbox.send(reply)  # answered on the spot: refused, or `initialize`

    def _start_request(
        self, request: Request, outbox: Outbox, *, send_reply: bool = False
    ) -> asyncio.Future[Reply | None]:
        """Begin serving a request; the future yields its reply, or None when cancelled.

        With `send_reply` the task sends its own reply as its last step, which saves the
        event-loop turn a done-callback would cost on every call.
        """
        if request.id in self._in_flight:
            duplicate = InvalidRequest(f"Request id {request.id!r} is already in use by a request in flight")
            return _done(error_response(request.id, duplicate))
        try:
            scope = self._scope_for(request, outbox)
        except ProtocolError as exc:
            return _done(error_response(request.id, exc))
        if scope is None:  # `initialize` is answered inline so that what follows it sees the session
            return _done(self._initialize(request, outbox))
        task = asyncio.ensure_future(self._serve(scope, send_reply))
        self._in_flight[request.id] = task
        if request.method in ENDLESS_METHODS:
            self._endless.add(request.id)
        return task

    async def _serve(self, scope: RequestScope, send_reply: bool) -> Reply | None:
        try:
            reply = await respond(self.server, scope)
        except asyncio.CancelledError:
            # Cancelled by the client, or by shutdown: JSON-RPC sends no reply, but an outbox
            # that is one HTTP exchange must still learn that this request is over.
            ended = getattr(scope.outbox, "request_ended", None)
            if ended is not None:
                ended(scope.request.id)
            return None
        finally:
            self._in_flight.pop(scope.request.id, None)
            self._endless.discard(scope.request.id)
        if send_reply:
            scope.outbox.send(reply)
        return reply

    def _scope_for(self, request: Request, outbox: Outbox) -> RequestScope | None:
        if is_modern_request(request.method, request.params):
            return modern_scope(request, outbox)
        event = classify(request.method, is_request=True)
        verdict = self.handshake.verdict_for(event)
        if verdict is not Verdict.ACCEPT:
            raise InvalidRequest(_REFUSALS[verdict])
        if event is SessionInput.INITIALIZE:
            return None
        session = self.session
        meta = (request.params or {}).get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return RequestScope(
            request=request,
            version=session.protocol_version if session else LATEST_HANDSHAKE_VERSION,
            modern=False,
            client_capabilities=session.client_capabilities if session else {},
            client_info=session.client_info if session else None,
            outbox=outbox,
            progress_token=token if isinstance(token, str | int) and not isinstance(token, bool) else None,
            log_threshold=(session.log_level or DEFAULT_LOG_LEVEL) if session else None,
            session=session,
            requester=self.requester(outbox),
            close_stream=getattr(outbox, "close_stream", None),
            owner=self.owner_id,
        )

    def _initialize(self, request: Request, outbox: Outbox) -> Reply:
        scope = RequestScope(request, LATEST_HANDSHAKE_VERSION, False, {}, None, outbox)
        try:
            validate_request_params("initialize", LATEST_HANDSHAKE_VERSION, request.params)
        except ProtocolError as exc:
            return error_reply(scope, exc)
        params: dict[str, Any] = request.params or {}
        version = negotiate(params.get("protocolVersion"))
        self.handshake.receive(SessionInput.INITIALIZE)
        self.handshake.protocol_version = version
        self.session = ClientSession(version, params.get("capabilities") or {}, params.get("clientInfo"))
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.server.capabilities(),
            "serverInfo": self.server.server_info(),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return Response(request.id, result)

    def _receive_notification(self, notification: Notification) -> None:
        version = self.session.protocol_version if self.session else LATEST_HANDSHAKE_VERSION
        if notification.method == "notifications/cancelled":
            request_id = (notification.params or {}).get("requestId")
            task = self._in_flight.get(request_id) if isinstance(request_id, str | int) else None
            if task is not None:
                task.cancel()
            return
        if notification.method == "notifications/initialized":
            self.handshake.receive(SessionInput.INITIALIZED)
            return
        if not validate_notification_params(notification.method, version, notification.params):
            logger.debug("ignoring notification %s", notification.method)

    # -- requests to the client (handshake era) -------------------------------------------------

    def requester(self, outbox: Outbox) -> ClientRequester:
        """Send requests to the client on `outbox` (a request's own stream) and await the answers."""

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            request_id = f"herald-{next(self._request_ids)}"
            answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._awaiting_client[request_id] = answer
            try:
                outbox.send(Request(request_id, method, params))
                return await answer
            finally:
                self._awaiting_client.pop(request_id, None)

        return request

    def _receive_client_answer(self, message: Response | ErrorResponse) -> None:
        answer = self._awaiting_client.get(message.id) if message.id is not None else None
        if answer is None or answer.done():
            if isinstance(message, ErrorResponse) and message.id is None:
                logger.warning("client reported an error: %s", message.error)
            else:
                logger.debug("ignoring an answer to no request of ours: %r", message.id)
            return
        if isinstance(message, Response):
            answer.set_result(message.result)
        else:
            answer.set_exception(ClientError(message.error))

    # -- server-initiated messages ------------------------------------------------------------

    def _on_server_notification(self, notification: Notification, uri: str | None) -> None:
        if not self.handshake.may_notify or self.session is None:
            return
        if uri is not None:
            if uri in self.session.subscriptions:
                self.outbox.send(notification)
            return
        kind = notification.method.split("/")[1]
        if self.server.capabilities().get(kind, {}).get("listChanged"):
            self.outbox.send(notification)

    def _on_job_event(self, job: JobRecord, event: JobEvent) -> None:
        """Events of jobs started here (the server tells no others), after `initialized` only."""
        if not self.handshake.may_notify:
            return
        keep = getattr(self.outbox, "start", None)
        if keep is not None:
            keep()  # an HTTP session's GET stream stores job events even before a client listens
        self.outbox.send(Notification(event.method, event.to_params()))
        if event.kind == "progress" and job.progress_token is not None:
            params: dict[str, Any] = {
                "progressToken": job.progress_token,
                "progress": job.percentage,
                "total": 100,
            }
            if job.stage:
                params["message"] = job.stage
            self.outbox.send(Notification("notifications/progress", params))

    # -- shutdown ----------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def aclose(self, *, cancel: bool = False) -> None:
        """Finish (or with `cancel`, stop) every request in flight, then detach from the server.

        Requests waiting for an answer from the client get an error instead: a client
        that is going away will not answer.
        """
        for answer in self._awaiting_client.values():
            if not answer.done():
                answer.set_exception(ConnectionError("the client closed the connection"))
        for request_id in self._endless:
            if (endless := self._in_flight.get(request_id)) is not None:
                endless.cancel()
        while self._in_flight or self._batch_replies:
            tasks: list[asyncio.Future[Any]] = [*self._in_flight.values(), *self._batch_replies]
            if cancel:
                for task in tasks:
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.handshake.receive(SessionInput.CLOSE)
        self._stop_listening()
        self._stop_job_events()


def _done(reply: Reply) -> asyncio.Future[Reply | None]:
    future: asyncio.Future[Reply | None] = asyncio.get_running_loop().create_future()
    future.set_result(reply)
    return future
