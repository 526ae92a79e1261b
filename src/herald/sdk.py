"""Job events for clients built on the official MCP Python SDK (`mcp`).

A herald server tells a job's life as `notifications/job/<kind>` (created, started,
progress, completed, failed, cancelled). The SDK drops every notification its core tables
do not know unless a `ClientExtension` binds it, and its `Client.listen()` sends only the
four filter keys of the spec, so out of the box neither era brings a job event to SDK code.
This module gives the SDK both roads:

* `JobEvents`, a `ClientExtension` that binds the six notifications. It checks each one
  against the event's published JSON Schema, turns it into a `JobEvent`, and delivers it
  once and in order: the SDK drains each notification method through its own queue and
  task, so a job's `completed` may be handed over before its last `progress`, and a
  replayed event may come twice. A `JobEventTracker` per job puts events in sequence order
  (the sequence is the tail of the `eventId`, so a repeat is a known sequence) and refuses
  what the job's state machine refuses. Events reach an `on_event` callback and the
  `follow(job_id)` iterators; `follow` can also read `get_job_status` for what no
  notification brought.
* `JobEvents.listen(client, job_ids=[...])`, for 2026-07-28 connections, where there is no
  session to carry notifications: it opens `subscriptions/listen` with the
  `io.herald/jobEvents` filter and returns once the server has acknowledged it, with the
  filter it honoured; the server first sends what the named jobs said so far.

In the handshake era the server sends a session's job events on the session (stdio, or
the HTTP session's GET stream), so the extension alone is enough:

    events = JobEvents()
    async with Client(server, mode="legacy", extensions=[events]) as client:
        started = await client.call_tool("start_bulk_gift_analysis", {"csv": csv})
        async for event in events.follow(started.structured_content["jobId"], client=client):
            print(event.kind, event.payload)

`mcp` is not a dependency of herald; this module needs it installed (`pip install mcp`).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import anyio
import jsonschema_rs
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict

from herald.client import JobEventTracker, JobTrackingError
from herald.jobs.events import KINDS, TERMINAL_KINDS, JobEvent, event_schema
from herald.server.jobs import JOB_EVENTS_EXTENSION, JOB_EVENTS_FILTER, JOB_EVENTS_SETTINGS

try:
    from mcp import Client, MCPError
    from mcp.client import ClientExtension, IncomingMessage, NotificationBinding
    from mcp.client.session import MessageHandlerFnT
    from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
    from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
except ImportError as missing:  # pragma: no cover - the tests run with the SDK installed
    raise ImportError(
        "herald.sdk extends the official MCP Python SDK, which is not installed here: "
        "pip install mcp (herald is tested with mcp 2.3.0)"
    ) from missing

__all__ = ["JobEvent", "JobEvents", "JobSubscription", "OnJobEvent"]

logger = logging.getLogger("herald.sdk")

#: Called with each event, once, in sequence order per job, one call at a time.
OnJobEvent = Callable[[JobEvent], Awaitable[None]]
#: The tool that lists a job's events after a cursor, as the server's extension settings name it.
POLL_TOOL: Final[str] = JOB_EVENTS_SETTINGS["pollTool"]
_VALIDATORS: Final = {f"job.{kind}": jsonschema_rs.validator_for(event_schema(kind)) for kind in KINDS}


class _EventParams(BaseModel):
    """A job notification's params as the SDK hands them over; checked by `JobEvents` itself.

    The published JSON Schema of each event type is the contract, so the SDK's pydantic
    step only has to keep every key.
    """

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class JobSubscription:
    """A `subscriptions/listen` stream of job events, as the server acknowledged it."""

    #: The listen request's JSON-RPC id, which the server stamps on every frame of the stream.
    id: types.RequestId | None
    #: The filter the server agreed to honour, on the wire's keys: `{"io.herald/jobEvents":
    #: true}` for every job of an authenticated caller, `{"io.herald/jobEvents": {"jobIds":
    #: [...]}}` for the jobs named, and no such key from a server without jobs or for "every
    #: job" asked by a caller nobody authenticated.
    honored: dict[str, Any]


class _JobLog:
    """One job's events in the order they were delivered, and the wake-up of its followers."""

    def __init__(self, job_id: str) -> None:
        self.tracker = JobEventTracker(job_id)
        self.events: list[JobEvent] = []
        self.changed = anyio.Event()

    def add(self, params: dict[str, Any]) -> list[JobEvent]:
        delivered = self.tracker.accept(params)
        if delivered:
            self.events.extend(delivered)
            self.changed.set()
            self.changed = anyio.Event()
        return delivered


class _Opening:
    """A listen request waiting for its acknowledgement, or for the request to end without one."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.ack: types.SubscriptionsAcknowledgedNotification | None = None
        self.refused: MCPError | None = None

    def subscription(self) -> JobSubscription:
        """What the acknowledgement says; if none came, why not, raised."""
        if self.ack is None:
            if self.refused is not None:
                raise self.refused
            raise SubscriptionLost("the job-events listen ended before the server acknowledged it")
        params = self.ack.params
        return JobSubscription(
            id=(params.meta or {}).get(SUBSCRIPTION_ID_META_KEY),
            honored=params.notifications.model_dump(by_alias=True, exclude_none=True, mode="json"),
        )


class JobEvents(ClientExtension):
    """Job events for an SDK `Client`: pass it in `extensions=[...]`.

    `on_event` is awaited with every event of every job the client hears of. To open a
    listen (2026-07-28) the client must also be built with `message_handler=
    events.message_handler`; give your own handler to `message_handler=` here and it gets
    every message as before. The events of each job the client has heard of are kept for
    the life of the extension, so `follow` can start after the events did.
    """

    identifier = JOB_EVENTS_EXTENSION

    def __init__(
        self, on_event: OnJobEvent | None = None, *, message_handler: MessageHandlerFnT | None = None
    ) -> None:
        self._on_event = on_event
        self._forward = message_handler
        self._logs: dict[str, _JobLog] = {}
        self._calls: deque[JobEvent] = deque()
        self._calling = False
        #: A raw listen's acknowledgement names an id this code never chose, so openings are
        #: told apart by order: one at a time, and the next acknowledgement is the opening's.
        self._open_lock = anyio.Lock()
        self._opening: _Opening | None = None

    def notifications(self) -> list[NotificationBinding[_EventParams]]:
        return [
            NotificationBinding(
                method=f"notifications/job/{kind}", params_type=_EventParams, handler=self._take_notification
            )
            for kind in KINDS
        ]

    async def _take_notification(self, params: _EventParams) -> None:
        await self._take(params.model_dump())

    async def _take(self, params: dict[str, Any]) -> None:
        """One event, notified or listed by `get_job_status`: checked, ordered, delivered once."""
        event = {key: value for key, value in params.items() if key != "_meta"}
        validator = _VALIDATORS.get(str(event.get("type")))
        if validator is None or not validator.is_valid(event):
            logger.warning("dropped a job event that does not match its schema: %r", event)
            return
        delivered = self._log(event["jobId"]).add(event)
        if self._on_event is not None and delivered:
            await self._call(delivered)

    async def _call(self, events: list[JobEvent]) -> None:
        """Hand events to `on_event` one call at a time, in the order they were delivered.

        Two of the SDK's queue tasks can be in here at once; the one already calling takes
        the other's events too, so calls neither overlap nor overtake each other.
        """
        assert self._on_event is not None
        self._calls.extend(events)
        if self._calling:
            return
        self._calling = True
        try:
            while self._calls:
                event = self._calls.popleft()
                try:
                    await self._on_event(event)
                except Exception:
                    # As the SDK does with a raising binding: costs that call, not the rest.
                    logger.exception("the job event callback raised on %s", event.event_id)
        finally:
            self._calling = False

    def _log(self, job_id: str) -> _JobLog:
        if (log := self._logs.get(job_id)) is None:
            log = self._logs[job_id] = _JobLog(job_id)
        return log

    async def follow(self, job_id: str, *, client: Client | None = None) -> AsyncIterator[JobEvent]:
        """Every event of one job, once and in order, ending with its terminal event.

        Events heard before the call come first. With `client`, what no notification
        brought is read from `get_job_status`: at once (events sent before the client
        could hear them, such as those of a job started before its listen opened), then
        whenever the job is quiet for the `pollAfterMs` the server asks for. Without it,
        the iterator waits for notifications only.
        """
        log = self._log(job_id)
        seen = 0
        cursor: str | None = None
        quiet_for = 0.0
        while True:
            changed = log.changed
            while seen < len(log.events):
                event = log.events[seen]
                seen += 1
                yield event
                if event.kind in TERMINAL_KINDS:
                    return
            if client is None:
                await changed.wait()
                continue
            with anyio.move_on_after(quiet_for) as quiet:
                await changed.wait()
            if not quiet.cancelled_caught:
                continue
            status = await _job_status(client, job_id, cursor)
            cursor = status["nextCursor"]
            for params in status["events"]:
                await self._take(params)
            if status["pollAfterMs"] is None and not log.tracker.finished:
                raise JobTrackingError(f"job {job_id} ended {status['status']} but its events do not end it")
            quiet_for = (status["pollAfterMs"] or 0) / 1000

    async def message_handler(self, message: IncomingMessage) -> None:
        """Give to `Client(message_handler=...)`: takes `listen`'s acknowledgement, forwards the rest."""
        opening = self._opening
        if (
            opening is not None
            and opening.ack is None
            and isinstance(message, types.SubscriptionsAcknowledgedNotification)
        ):
            opening.ack = message
            opening.done.set()
            return
        if self._forward is not None:
            await self._forward(message)

    @asynccontextmanager
    async def listen(
        self, client: Client, *, job_ids: Sequence[str] | None = None
    ) -> AsyncIterator[JobSubscription]:
        """Listen for job events (2026-07-28) until the block ends.

        With `job_ids` the server first sends what the named jobs said so far, then the
        rest, so a job started before the listen loses nothing. Without, the stream carries
        the events of the caller's own jobs, which only an authenticated caller has: a
        server leaves the filter out of its acknowledgement (`honored`) for anyone else,
        since "every job" would be everyone's. Returns once the server acknowledged,
        within the client's read timeout. The SDK's `listen()` cannot send the job-events
        filter, so this sends the request through the public `ClientSession.send_request`;
        the acknowledgement of a request sent that way reaches only the client's
        `message_handler`, which must be `self.message_handler`. Should the server end the
        stream while the block runs, events stop coming by it; a `follow` given `client=`
        still reaches the job's end by polling.

        Raises:
            ListenNotSupportedError: the connection is in the handshake era.
            MCPError: the server refused the listen.
            SubscriptionLost: the stream ended before it was acknowledged.
            TimeoutError: no acknowledgement within the client's read timeout.
        """
        if isinstance(job_ids, str):
            raise TypeError("job_ids takes a sequence of job ids, not a bare string")
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise ListenNotSupportedError(client.protocol_version)
        if self not in (client.extensions or ()) or client.message_handler != self.message_handler:
            raise RuntimeError(
                "JobEvents.listen needs a client built with "
                "Client(..., extensions=[events], message_handler=events.message_handler)"
            )
        wanted: bool | dict[str, list[str]] = True if job_ids is None else {"jobIds": list(job_ids)}
        request = types.SubscriptionsListenRequest(
            params=types.SubscriptionsListenRequestParams(
                notifications=types.SubscriptionFilter.model_validate({JOB_EVENTS_FILTER: wanted})
            )
        )
        opening = _Opening()

        async def drive() -> None:
            try:
                # No timeout: the result of a listen is its end.
                await client.session.send_request(
                    request, types.SubscriptionsListenResult, request_read_timeout_seconds=math.inf
                )
            except MCPError as error:
                opening.refused = error
            finally:
                opening.done.set()

        try:
            async with anyio.create_task_group() as group:
                async with self._open_lock:
                    self._opening = opening
                    try:
                        group.start_soon(drive)
                        with anyio.fail_after(client.read_timeout_seconds):
                            await opening.done.wait()
                    finally:
                        self._opening = None
                try:
                    yield opening.subscription()
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as failed:
            # anyio wraps whatever leaves a task group. `drive` keeps the server's refusal
            # to itself, so a lone exception is this block's own (or its caller's): raise it
            # as it was raised, with the cause it had.
            if len(failed.exceptions) == 1:
                only = failed.exceptions[0]
                raise only from only.__cause__
            raise


async def _job_status(client: Client, job_id: str, cursor: str | None) -> dict[str, Any]:
    arguments = {"jobId": job_id} if cursor is None else {"jobId": job_id, "cursor": cursor}
    result = await client.call_tool(POLL_TOOL, arguments)
    status = result.structured_content
    if result.is_error or not isinstance(status, dict):
        raise JobTrackingError(f"{POLL_TOOL} could not tell job {job_id}: {result.content}")
    return status
