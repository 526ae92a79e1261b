"""The server side of one MCP conversation, without I/O: h11's `Connection`, for MCP.

Theory of operation
-------------------
A transport hands `ServerConnection` every message it reads (`receive_data` for bytes,
`receive` for a decoded message or batch) and gets back one *event* saying what the
message means: a request to serve (`RequestReceived`, with everything its era says about
the client), an answer the connection gave by itself (`Answered`: a refusal, a duplicate
id, `initialize`), a cancellation, a client's answer to one of our own requests, a batch
of those, or nothing to do (`Ignored`). The transport acts on the event (runs the handler,
sends the reply) and reports back with `request_finished`. The connection never awaits,
starts a task or touches a socket, so every rule is testable message by message and the
same rules hold for stdio, each HTTP session, each 2026-07-28 POST and the in-memory client.

What it owns:
- the era of each message, decided once here (`Era`), and the handshake table;
- id bookkeeping: requests in flight, duplicate ids, the batch policy, and which replies
  a message waits for (`reply_ids`, `refused_whole`: what ends an HTTP POST, and how);
- correlation of server-to-client requests (`start_request`) with their answers;
- whether a server-initiated notification may go out now (`may_send`);
- the 2026-07-28 HTTP rule of which error wins when the headers and the body disagree.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from herald.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES, Batch, decode, error_id, error_response
from herald.protocol.errors import HeaderMismatch, InvalidRequest, ProtocolError, UnsupportedProtocolVersion
from herald.protocol.http import check_modern_headers
from herald.protocol.messages import ErrorResponse, Message, Notification, Request, RequestId, Response
from herald.protocol.modern import is_modern_request, read_envelope
from herald.protocol.session import HandshakeSession, SessionInput, Verdict, classify
from herald.protocol.validation import validate_notification_params, validate_request_params
from herald.protocol.versions import (
    BATCH_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    PROTOCOL_VERSION_KEY,
    Era,
    negotiate,
)

#: Until the client calls `logging/setLevel`, log messages at this level and above go out.
DEFAULT_LOG_LEVEL: Final = "info"

#: Methods whose requests stay open until the client cancels them.
ENDLESS_METHODS: Final = frozenset({"subscriptions/listen"})

_REFUSALS: Final = {
    Verdict.REFUSE_NOT_INITIALIZED: (
        "Session not initialized: send 'initialize' first (only 'ping' is allowed before it)"
    ),
    Verdict.REFUSE_ALREADY_INITIALIZED: "Session already initialized: 'initialize' may be sent only once",
    Verdict.REFUSE_CLOSED: "Session closed",
}

Reply = Response | ErrorResponse


@dataclass(slots=True)
class SessionData:
    """Handshake-era state that outlives a request: plain data, so a store can hold it."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None = None
    subscriptions: set[str] = field(default_factory=set)


# -- events ------------------------------------------------------------------------------------


@dataclass(slots=True)
class RequestReceived:
    """A request to serve, with what its era says about the client.

    Not frozen, unlike the other events: one is made per request, and a frozen
    dataclass pays an `object.__setattr__` per field to be built.
    """

    request: Request
    era: Era
    version: str
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    progress_token: str | int | None
    log_threshold: str | None
    session: SessionData | None


@dataclass(frozen=True, slots=True)
class Answered:
    """The connection answered by itself; the transport sends `reply` and runs nothing.

    `refused` when what was refused is no message this session can take at all (a batch
    where the version has none, an entry of a batch that is no message): input the server
    cannot accept, which Streamable HTTP answers with 400.
    """

    reply: Reply
    refused: bool = False


@dataclass(frozen=True, slots=True)
class CancelRequested:
    """The client cancelled a request that is in flight."""

    request_id: RequestId


@dataclass(frozen=True, slots=True)
class ClientAnswered:
    """The client answered one of our requests (`result`, or `error` when it refused)."""

    request_id: RequestId
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Ignored:
    """Nothing to do; `reason` is for the debug log."""

    reason: str
    warn: bool = False


@dataclass(frozen=True, slots=True)
class BatchReceived:
    """A batch, item by item; the replies of its requests go back together as one batch."""

    events: tuple[Event, ...]


Event = RequestReceived | Answered | CancelRequested | ClientAnswered | Ignored | BatchReceived


def reply_ids(event: Event) -> frozenset[RequestId | None]:
    """The ids of the replies the client gets to the message of `event`, all in one answer.

    A request is answered under its id, a refusal under the id it names (None when there
    was none to read), a batch with one array of its entries' replies; notifications and
    answers to our requests get nothing. Over HTTP this is what a POST waits for before it
    ends, and a POST that waits for nothing is answered 202 at once.
    """
    if isinstance(event, RequestReceived):
        return frozenset({event.request.id})
    if isinstance(event, Answered):
        return frozenset({event.reply.id})
    if isinstance(event, BatchReceived):
        return frozenset().union(*(reply_ids(item) for item in event.events))
    return frozenset()


def refused_whole(event: Event) -> bool:
    """Whether nothing of the message was taken: it was refused, or each entry of its batch was
    no message (Streamable HTTP answers such input 400, with the same replies as its body)."""
    if isinstance(event, BatchReceived):
        return bool(event.events) and all(refused_whole(item) for item in event.events)
    return isinstance(event, Answered) and event.refused


class ServerConnection:
    """The protocol state of one client, fed message by message.

    `hello` supplies what `initialize` answers besides the version (capabilities, server
    info, instructions); `tool_schema` looks up a tool's input schema, which the
    2026-07-28 HTTP header rules need for `Mcp-Param-*` headers.
    """

    def __init__(
        self,
        hello: Callable[[], dict[str, Any]],
        *,
        tool_schema: Callable[[str], object] | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.hello = hello
        self.tool_schema = tool_schema
        self.max_message_bytes = max_message_bytes
        self.handshake = HandshakeSession()
        self.session: SessionData | None = None
        self._in_flight: set[RequestId] = set()
        self._endless: set[RequestId] = set()
        self._awaiting_client: set[RequestId] = set()
        self._request_ids = itertools.count(1)

    # -- input ------------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> Event:
        """One frame off the wire: a message, a batch, or bytes that are neither."""
        try:
            decoded = decode(data, max_bytes=self.max_message_bytes)
        except ProtocolError as exc:
            return Answered(error_response(error_id(exc), exc))
        return self.receive(decoded)

    def receive(self, message: Message | Batch, headers: Mapping[str, str] | None = None) -> Event:
        """What one message means. `headers` are the HTTP request's, when it came by HTTP."""
        if isinstance(message, Batch):
            return self._receive_batch(message)
        if isinstance(message, Request):
            return self._receive_request(message, headers)
        if isinstance(message, Notification):
            return self._receive_notification(message)
        return self._receive_answer(message)

    def _receive_batch(self, batch: Batch) -> Event:
        version = self.session.protocol_version if self.session else None
        if version not in BATCH_VERSIONS:
            refusal = InvalidRequest(
                f"JSON-RPC batches are not supported in protocol version {version or 'before initialize'}; "
                "they are allowed only on a 2025-03-26 session"
            )
            return Answered(error_response(None, refusal), refused=True)
        events: list[Event] = []
        for item in batch.items:
            if isinstance(item, ErrorResponse) and item.error["code"] == InvalidRequest.code:
                events.append(Answered(item, refused=True))  # no message: its refusal goes back
            else:
                events.append(self.receive(item))
        return BatchReceived(tuple(events))

    def _receive_request(self, request: Request, headers: Mapping[str, str] | None) -> Event:
        if request.id in self._in_flight:
            duplicate = InvalidRequest(f"Request id {request.id!r} is already in use by a request in flight")
            return Answered(error_response(request.id, duplicate))
        try:
            if is_modern_request(request.method, request.params):
                event: Event = self._modern_request_of(request, headers)
            else:
                event = self._session_request(request)
        except ProtocolError as exc:
            return Answered(error_response(request.id, exc))
        if isinstance(event, RequestReceived):
            self._in_flight.add(request.id)
            if request.method in ENDLESS_METHODS:
                self._endless.add(request.id)
        return event

    def _modern_request_of(self, request: Request, headers: Mapping[str, str] | None) -> RequestReceived:
        """A 2026-07-28 request: everything comes from its own `_meta` (and, over HTTP, its headers)."""
        params = request.params or {}
        try:
            envelope = read_envelope(request.method, params)
        except UnsupportedProtocolVersion:
            # Over HTTP, headers that disagree with the body are the error to report first.
            body_version = (params.get("_meta") or {}).get(PROTOCOL_VERSION_KEY)
            if headers is not None and headers.get("mcp-protocol-version") != body_version:
                raise HeaderMismatch(
                    f"Header mismatch: MCP-Protocol-Version is {headers.get('mcp-protocol-version')!r} "
                    f"but the request says {body_version!r}"
                ) from None
            raise
        if headers is not None:
            schema = (
                self.tool_schema(params.get("name", ""))
                if request.method == "tools/call" and self.tool_schema is not None
                else None
            )
            check_modern_headers(headers, request.method, params, envelope.version, schema)
        return RequestReceived(
            request=request,
            era=Era.MODERN,
            version=envelope.version,
            client_capabilities=envelope.client_capabilities,
            client_info=envelope.client_info,
            progress_token=envelope.progress_token,
            log_threshold=envelope.log_level,
            session=None,
        )

    def _session_request(self, request: Request) -> Event:
        event = classify(request.method, is_request=True)
        verdict = self.handshake.verdict_for(event)
        if verdict is not Verdict.ACCEPT:
            raise InvalidRequest(_REFUSALS[verdict])
        if event is SessionInput.INITIALIZE:
            return Answered(self._initialize(request))
        session = self.session
        meta = (request.params or {}).get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return RequestReceived(
            request=request,
            era=Era.HANDSHAKE,
            version=session.protocol_version if session else LATEST_HANDSHAKE_VERSION,
            client_capabilities=session.client_capabilities if session else {},
            client_info=session.client_info if session else None,
            progress_token=token if isinstance(token, str | int) and not isinstance(token, bool) else None,
            log_threshold=(session.log_level or DEFAULT_LOG_LEVEL) if session else None,
            session=session,
        )

    def _initialize(self, request: Request) -> Reply:
        """Answered on the spot, so that whatever the client pipelines behind it sees the session."""
        try:
            validate_request_params("initialize", LATEST_HANDSHAKE_VERSION, request.params)
        except ProtocolError as exc:
            return error_response(request.id, exc)
        params: dict[str, Any] = request.params or {}
        version = negotiate(params.get("protocolVersion"))
        self.handshake.receive(SessionInput.INITIALIZE)
        self.handshake.protocol_version = version
        self.session = SessionData(version, params.get("capabilities") or {}, params.get("clientInfo"))
        return Response(request.id, {"protocolVersion": version, **self.hello()})

    def resume(self, session: SessionData, *, operating: bool) -> None:
        """Take up a session another connection began (a replica's, found in the session store).

        It is as if this connection had answered its `initialize` (and, with `operating`,
        heard its `notifications/initialized`): what the client negotiated holds here too.
        """
        self.handshake.receive(SessionInput.INITIALIZE)
        self.handshake.protocol_version = session.protocol_version
        if operating:
            self.handshake.receive(SessionInput.INITIALIZED)
        self.session = session

    def _receive_notification(self, notification: Notification) -> Event:
        if notification.method == "notifications/cancelled":
            request_id = (notification.params or {}).get("requestId")
            if isinstance(request_id, str | int) and request_id in self._in_flight:
                return CancelRequested(request_id)
            return Ignored(f"cancellation of no request in flight: {request_id!r}")
        if notification.method == "notifications/initialized":
            self.handshake.receive(SessionInput.INITIALIZED)
            return Ignored("initialized")
        version = self.session.protocol_version if self.session else LATEST_HANDSHAKE_VERSION
        if not validate_notification_params(notification.method, version, notification.params):
            return Ignored(f"notification {notification.method} with invalid params")
        return Ignored(f"notification {notification.method}")

    def _receive_answer(self, message: Reply) -> Event:
        if message.id is None or message.id not in self._awaiting_client:
            if isinstance(message, ErrorResponse) and message.id is None:
                return Ignored(f"the client reported an error: {message.error}", warn=True)
            return Ignored(f"an answer to no request of ours: {message.id!r}")
        self._awaiting_client.discard(message.id)
        if isinstance(message, Response):
            return ClientAnswered(message.id, result=message.result)
        return ClientAnswered(message.id, error=message.error)

    # -- bookkeeping the transport reports ------------------------------------------------------------

    def request_finished(self, request_id: RequestId) -> None:
        """The request was answered or cancelled: its id is free again."""
        self._in_flight.discard(request_id)
        self._endless.discard(request_id)

    @property
    def in_flight(self) -> frozenset[RequestId]:
        return frozenset(self._in_flight)

    @property
    def endless(self) -> frozenset[RequestId]:
        """Requests that end only by cancellation (subscriptions): closing cancels them."""
        return frozenset(self._endless)

    # -- requests to the client -------------------------------------------------------------------

    def start_request(self, method: str, params: dict[str, Any]) -> Request:
        """A request of ours to send; its answer comes back as `ClientAnswered`."""
        request = Request(f"herald-{next(self._request_ids)}", method, params)
        self._awaiting_client.add(request.id)
        return request

    def stop_waiting(self, request_id: RequestId) -> None:
        """We gave up on an answer (the request was cancelled): a late one is ignored."""
        self._awaiting_client.discard(request_id)

    @property
    def awaiting_client(self) -> frozenset[RequestId]:
        return frozenset(self._awaiting_client)

    # -- server-initiated messages ------------------------------------------------------------------

    @property
    def may_notify(self) -> bool:
        """Whether the server may send messages of its own now (after `initialized`)."""
        return self.handshake.may_notify

    def may_send(self, uri: str | None, *, list_changed: bool) -> bool:
        """Whether a server notification goes to this client.

        A resource update goes to a session subscribed to its `uri`; a list change only
        where the server declares `listChanged` for that list.
        """
        if not self.may_notify or self.session is None:
            return False
        if uri is not None:
            return uri in self.session.subscriptions
        return list_changed

    def close(self) -> None:
        """The conversation is over: everything from now on is refused."""
        self.handshake.receive(SessionInput.CLOSE)
