"""Drives the sans-IO `ServerConnection` for one client: the asyncio half of a connection.

`herald.protocol.connection` decides what every message means; this module acts on its
events. Each accepted request is served in its own task so a slow tool never blocks
`ping`, and every such task belongs to the connection's task group: `async with
Connection(...)` opens it, and leaving the block (or `aclose` from inside it) finishes or
cancels what is in flight and awaits it, so nothing outlives the connection.

Messages come in through `receive_data` or `receive_message` together with the `Outbox`
their answers belong on (stdio has one for everything; HTTP has one per POST), and
server-initiated messages leave through the connection's own outbox (stdout, or the
session's GET stream).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any

import herald.logs
import herald.telemetry
from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES, Batch, decode
from herald.protocol.connection import (
    Answered,
    BatchReceived,
    CancelRequested,
    ClientAnswered,
    Event,
    RequestReceived,
    ServerConnection,
    SessionData,
)
from herald.protocol.errors import ProtocolError
from herald.protocol.messages import ErrorResponse, Message, Notification, RequestId, Response
from herald.server import tracing
from herald.server.dispatch import respond
from herald.server.inputs import ClientRequester
from herald.server.outbox import Outbox
from herald.server.principal import Principal
from herald.server.scope import RequestScope
from herald.taskgroup import logged
from herald.telemetry import names

if TYPE_CHECKING:
    from herald.server.app import Server
    from herald.telemetry.instruments import Operation, Telemetry

logger = logging.getLogger("herald.connection")

Reply = Response | ErrorResponse


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
        follows_server: bool = True,
        tasks: asyncio.TaskGroup | None = None,
        peer: str | None = None,
        transport: str = "pipe",
    ):
        """`follows_server=False` for a connection of one exchange (a 2026-07-28 POST), which
        hears no server notifications: those reach stateless clients through a subscription.

        With `tasks` (an HTTP session: the server lifespan's group), the connection starts
        its tasks in that group and `aclose` awaits its own; without, `async with` opens a
        group of the connection's own. A session then costs no task while it is idle.

        `transport` is the network under it, as spans name it: "pipe" (stdio) or "tcp" (HTTP).
        """
        self.server = server
        self.outbox = outbox
        self.protocol = ServerConnection(
            server.hello, tool_schema=server.tool_input_schema, max_message_bytes=max_message_bytes
        )
        self._group = tasks
        #: Tasks started in a group the connection does not own, which `aclose` awaits.
        self._shared: set[asyncio.Task[Any]] | None = set() if tasks is not None else None
        self._closed = False
        self._tasks: dict[RequestId, asyncio.Task[Reply | None]] = {}
        self._answers: dict[RequestId, asyncio.Future[dict[str, Any]]] = {}
        #: The network address of the client, where the transport knows it (`Context.peer`).
        self.peer = peer
        self.transport = transport
        #: The HTTP session's id (`Mcp-Session-Id`), for the spans of its messages.
        self.session_id: str | None = None
        #: The spans of requests received and not yet answered, while telemetry is on.
        self.traced: dict[RequestId, Operation] = {}
        #: Requests cancelled before their task began: it ends as soon as it begins.
        self._cancel_at_start: set[RequestId] = set()
        self._opened = time.monotonic()
        #: Jobs started on this connection report their events here.
        self.owner_id = owner_id or (secrets.token_hex(16) if follows_server else "")
        self._stop_listening: Callable[[], None] = _nothing
        self._stop_job_events: Callable[[], None] = _nothing
        if follows_server:
            self._stop_listening = server.notifications.add_listener(self._on_server_notification)
            self._stop_job_events = server.jobs.add_listener(self._on_job_event, owner=self.owner_id)

    @property
    def session(self) -> SessionData | None:
        return self.protocol.session

    # -- lifetime ------------------------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        group = asyncio.TaskGroup()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose(cancel=error is not None)

    async def aclose(self, *, cancel: bool = False) -> None:
        """Finish (or with `cancel`, stop) every task in flight, then detach from the server.

        Requests waiting for an answer from the client get an error instead: a client
        that is going away will not answer. With a group of its own, this must run in the
        task that entered the block.
        """
        if self._closed:
            return
        self._closed = True
        for answer in self._answers.values():
            if not answer.done():
                answer.set_exception(ConnectionError("the client closed the connection"))
        for request_id in self.protocol.endless:
            self._cancel(request_id)
        if cancel:
            self.cancel_requests()
        group, self._group = self._group, None
        if self._shared is not None:
            while self._shared:
                await asyncio.gather(*self._shared, return_exceptions=True)
        elif group is not None:
            await group.__aexit__(None, None, None)
        self.protocol.close()
        self._stop_listening()
        self._stop_job_events()
        if (telemetry := herald.telemetry.active) is not None:
            self._report_closed(telemetry)

    def _report_closed(self, telemetry: Telemetry) -> None:
        """The session's duration, for a connection that had one (a handshake); requests
        that never started serving end their spans as cancelled."""
        for operation in self.traced.values():
            telemetry.end_server(operation, names.CANCELLED)
        self.traced.clear()
        version = self.protocol_version
        if version is not None:
            attributes = {names.PROTOCOL_VERSION: version, names.TRANSPORT: self.transport}
            telemetry.session_ended(time.monotonic() - self._opened, attributes)

    @property
    def protocol_version(self) -> str | None:
        """The version the session negotiated; None before `initialize`, and for 2026-07-28."""
        session = self.protocol.session
        return session.protocol_version if session is not None else None

    def cancel_requests(self) -> None:
        """Cancel every request in flight (the client went away); each still ends in order."""
        for request_id in list(self._tasks):
            self._cancel(request_id)

    def _cancel(self, request_id: RequestId) -> None:
        """Stop serving a request. One whose task has not begun yet is left to begin and stop
        at once (`_serve`): a task cancelled before it starts never runs its cleanup, which
        would leave the id in use, its span open and its HTTP answer waiting."""
        task = self._tasks.get(request_id)
        if task is None:
            return
        if inspect.getcoroutinestate(task.get_coro()) == inspect.CORO_CREATED:  # type: ignore[arg-type]
            self._cancel_at_start.add(request_id)
        else:
            task.cancel()

    def spawn(self, coroutine: Coroutine[Any, Any, Any], *, guarded: bool = True) -> asyncio.Task[Any]:
        """Start a task the connection owns: `aclose` finishes or cancels it.

        A task that fails is logged and ends alone: it must not take down the group,
        which holds the connection's other requests (or, shared, other sessions).
        `guarded=False` is for coroutines that never raise but for cancellation (`_serve`),
        which saves a coroutine layer on every request.
        """
        if self._group is None:
            coroutine.close()
            raise RuntimeError("the connection is not open: use `async with Connection(...)`")
        task = self._group.create_task(logged(coroutine, "a connection") if guarded else coroutine)
        if guarded:  # cancelled before it started, the guard never awaited `coroutine`: close it
            task.add_done_callback(lambda _: coroutine.close())
        if self._shared is not None:
            self._shared.add(task)
            task.add_done_callback(self._shared.discard)
        return task

    # -- input -----------------------------------------------------------------------------

    def receive_data(self, data: bytes, outbox: Outbox | None = None) -> None:
        """Handle one frame: a message, or a batch where the session allows batches."""
        if herald.telemetry.active is not None:
            try:  # decoded here, so that the spans see the message
                message = decode(data, max_bytes=self.protocol.max_message_bytes)
            except ProtocolError:
                pass  # the protocol's own decoding answers it
            else:
                self.receive_message(message, outbox)
                return
        self._act(self.protocol.receive_data(data), outbox or self.outbox)

    def receive_message(
        self,
        message: Message | Batch,
        outbox: Outbox | None = None,
        headers: dict[str, str] | None = None,
        principal: Principal | None = None,
        *,
        carrier: dict[str, str] | None = None,
    ) -> None:
        """Handle a decoded message; `principal` is who the transport authenticated it as."""
        self.act(self.interpret(message, headers, carrier=carrier), outbox, principal)

    def interpret(
        self,
        message: Message | Batch,
        headers: dict[str, str] | None = None,
        *,
        carrier: dict[str, str] | None = None,
    ) -> Event:
        """What `message` means (the sans-IO connection's event), for a transport that must
        know before it acts (`act`): an HTTP POST waits for the replies it names (`reply_ids`).

        `headers` are what the protocol checks (a 2026-07-28 request's); `carrier` (or,
        without it, `headers`) is where a span looks for the trace context of the HTTP
        request when the message's `_meta` has none.

        The connection has taken the message in: `act` must follow, with no await between.
        """
        event = self.protocol.receive(message, headers)
        if (telemetry := herald.telemetry.active) is not None:
            tracing.received(telemetry, self, message, event, carrier if carrier is not None else headers)
        return event

    def act(self, event: Event, outbox: Outbox | None = None, principal: Principal | None = None) -> None:
        """Do what `event` says: serve its requests, send its answers on `outbox`."""
        self._act(event, outbox or self.outbox, principal)

    def _act(self, event: Event, outbox: Outbox, principal: Principal | None = None) -> None:
        if isinstance(event, RequestReceived):
            self._tasks[event.request.id] = self.spawn(
                self._serve(event, outbox, send_reply=True, principal=principal), guarded=False
            )
        elif isinstance(event, Answered):
            outbox.send(event.reply)
        elif isinstance(event, BatchReceived):
            self._act_on_batch(event, outbox, principal)
        elif isinstance(event, CancelRequested):
            self._cancel(event.request_id)
        elif isinstance(event, ClientAnswered):
            self._client_answered(event)
        elif event.warn:
            logger.warning("%s", event.reason)
        else:
            logger.debug("ignoring %s", event.reason)

    def _act_on_batch(self, batch: BatchReceived, outbox: Outbox, principal: Principal | None) -> None:
        replies: list[Reply | asyncio.Task[Reply | None]] = []
        for event in batch.events:
            if isinstance(event, RequestReceived):
                serve = self._serve(event, outbox, send_reply=False, principal=principal)
                task = self.spawn(serve, guarded=False)
                self._tasks[event.request.id] = task
                replies.append(task)
            elif isinstance(event, Answered):
                replies.append(event.reply)
            else:
                self._act(event, outbox, principal)
        if replies:
            self.spawn(self._send_batch_reply(replies, outbox))

    async def _send_batch_reply(
        self, replies: list[Reply | asyncio.Task[Reply | None]], outbox: Outbox
    ) -> None:
        answered = [
            reply if isinstance(reply, Response | ErrorResponse) else await reply for reply in replies
        ]
        found = tuple(reply for reply in answered if reply is not None)
        if found:
            outbox.send(found)

    async def _serve(
        self,
        received: RequestReceived,
        outbox: Outbox,
        *,
        send_reply: bool,
        principal: Principal | None = None,
    ) -> Reply | None:
        """Serve one request; with `send_reply` the task sends its reply itself as its last step.

        That saves the event-loop turn a done-callback would cost on every call.
        """
        if received.era.modern:
            scope = RequestScope.of(received, outbox, principal=principal, peer=self.peer)
        else:
            scope = RequestScope.of(
                received,
                outbox,
                requester=self.requester(outbox),
                close_stream=outbox.stream_closer(),
                owner=self.owner_id,
                principal=principal,
                peer=self.peer,
            )
        request_id = received.request.id
        if herald.logs.wanted:  # this task's own context: lines it logs name the request
            herald.logs.REQUEST.set((request_id, self.owner_id or None))
        operation = self.traced.pop(request_id, None) if self.traced else None
        telemetry = herald.telemetry.active if operation is not None else None
        if operation is not None and telemetry is not None:
            telemetry.enter(operation)  # this task's own context: what it starts joins the span
        try:
            if self._cancel_at_start and request_id in self._cancel_at_start:
                self._cancel_at_start.discard(request_id)
                raise asyncio.CancelledError
            reply = await respond(self.server, scope)
        except asyncio.CancelledError:
            # Cancelled by the client, or by shutdown: JSON-RPC sends no reply, but an outbox
            # that is one HTTP exchange must still learn that this request is over.
            outbox.request_ended(request_id)
            if operation is not None and telemetry is not None:
                tracing.end_reply(telemetry, operation, received.request.method, None)
            return None
        finally:
            self.protocol.request_finished(request_id)
            self._tasks.pop(request_id, None)
        if operation is not None and telemetry is not None:
            tracing.end_reply(telemetry, operation, received.request.method, reply)
        if send_reply:
            try:
                outbox.send(reply)
            except Exception:  # a transport fault must not take the connection's other requests down
                logger.exception("could not send the reply to %r", request_id)
        return reply

    # -- requests to the client (handshake era) -------------------------------------------------

    def requester(self, outbox: Outbox) -> ClientRequester:
        """Send requests to the client on `outbox` (a request's own stream) and await the answers."""

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            telemetry = herald.telemetry.active
            if telemetry is None:
                return await send(method, params)
            attributes = tracing.client_attributes(self, method, params)
            return await telemetry.request(
                method, params, attributes, functools.partial(send, method), _client_refusal
            )

        async def send(method: str, params: dict[str, Any]) -> dict[str, Any]:
            message = self.protocol.start_request(method, params)
            answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._answers[message.id] = answer
            try:
                outbox.send(message)
                return await answer
            finally:
                self._answers.pop(message.id, None)
                self.protocol.stop_waiting(message.id)

        return request

    def _client_answered(self, event: ClientAnswered) -> None:
        answer = self._answers.get(event.request_id)
        if answer is None or answer.done():
            return
        if event.error is not None:
            answer.set_exception(ClientError(event.error))
        else:
            answer.set_result(event.result or {})

    # -- server-initiated messages ------------------------------------------------------------

    def _on_server_notification(self, notification: Notification, uri: str | None) -> None:
        declared = uri is None and bool(
            self.server.capabilities().get(notification.method.split("/")[1], {}).get("listChanged")
        )
        if self.protocol.may_send(uri, list_changed=declared):
            self.outbox.send(notification)

    def _on_job_event(self, job: JobRecord, event: JobEvent) -> None:
        """Events of jobs started here (the server tells no others), after `initialized` only."""
        if not self.protocol.may_notify:
            return
        self.outbox.send_job_event(event, job.progress_token)

    # -- shutdown ----------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._tasks)


def _nothing() -> None:
    return None


def _client_refusal(failed: BaseException) -> tuple[int, str] | None:
    """The code and message of the client's error answer, where `failed` is one."""
    if isinstance(failed, ClientError):
        return int(failed.error.get("code", 0)), str(failed.error.get("message", ""))
    return None
