"""What every herald client does the same way, whatever carries its messages.

A transport only has to send a request and get its reply, report notifications as they
arrive, say when its connection dropped, and know how to open a fresh connection. On
top of that this module builds the two things that must not differ between stdio and
HTTP: reconnecting with bounded backoff, and following a job.

Following a job mixes two sources on purpose. Live notifications are prompt but are
only sent to the connection that started the job, and only while it is connected;
`get_job_status` with a cursor is slower but works in every era and after any failure,
because the job store keeps every event. `job_events` listens to the first and, whenever
it goes quiet for the server's `pollAfterMs` or the connection drops, asks the second
from its last cursor. The `JobEventTracker` makes the union exactly-once and ordered.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import herald.telemetry
from herald.client.tracking import JobEventTracker
from herald.jobs.events import JobEvent
from herald.protocol.messages import JSONObject
from herald.telemetry import names

#: First and largest pause between attempts to reach a server again, in seconds.
BACKOFF_START: Final = 0.05
BACKOFF_MAX: Final = 2.0
#: A job prefix: notifications with this method prefix carry job events.
JOB_EVENT_PREFIX: Final = "notifications/job/"


class ServerError(Exception):
    """The server answered a request with a JSON-RPC error.

    Also raised for an error the server could not address to a request (see
    `Client.unpaired_errors`); `http_status` is the status it came with over HTTP.
    """

    def __init__(self, error: JSONObject, *, http_status: int | None = None):
        super().__init__(f"{error.get('message')} (code {error.get('code')})")
        self.code: int = error.get("code", 0)
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        self.http_status = http_status


class ConnectionLost(ConnectionError):
    """The transport is gone: the process exited, the connection failed, or the session is unknown.

    A request that raises it may or may not have been carried out; `job_events` only
    repeats requests that are safe to repeat (`get_job_status`).
    """


def _server_refusal(failed: BaseException) -> tuple[int, str] | None:
    return (failed.code, failed.message) if isinstance(failed, ServerError) else None


class JobTrackingError(Exception):
    """The server says a job ended, yet its events do not add up to an ending."""


class Client(abc.ABC):
    """One connection to a server, in either era, that can re-establish itself."""

    def __init__(self, *, modern: bool, reconnect_timeout: float = 30.0) -> None:
        self.modern = modern
        #: How long `reconnect` keeps trying before it gives up with `ConnectionLost`.
        self.reconnect_timeout = reconnect_timeout
        #: Every notification (and server request) received, in arrival order.
        self.notifications: list[JSONObject] = []
        #: Error responses whose id was null or named no request in flight, in arrival order.
        #: The server sends one when it could not read a message's id (it was not JSON, or
        #: too large to read). Silently dropping it would leave the request it was about
        #: waiting forever, so each transport also fails the requests it could belong to:
        #: over stdio every request then waiting, over HTTP the request of the POST it came on.
        self.unpaired_errors: list[JSONObject] = []
        self.server_info: JSONObject | None = None
        #: Bumped by every successful (re)connection; tells a stale failure from a fresh one.
        self.generation = 0
        #: Told of each failed attempt to reconnect (its number, from 1, and why it failed), so
        #: that a person watching is shown "connection lost, retrying…" rather than a frozen screen.
        self.on_retry: Callable[[int, ConnectionLost], None] | None = None
        #: Told when a reconnection succeeded after at least one failed attempt.
        self.on_reconnected: Callable[[], None] | None = None
        self._inboxes: set[asyncio.Queue[JSONObject | None]] = set()
        self._reconnecting = asyncio.Lock()

    # -- what a transport provides ---------------------------------------------------------------

    @abc.abstractmethod
    async def _request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return its result; `ServerError` or `ConnectionLost` otherwise."""

    @abc.abstractmethod
    async def _reopen(self) -> JSONObject:
        """Open a fresh connection, complete the era's opening (initialize or discover), return its result."""

    # -- shared behaviour -------------------------------------------------------------------------

    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return its result; `ServerError` or `ConnectionLost` otherwise.

        While telemetry is on (`herald.telemetry`), in a CLIENT span whose context goes in
        the request's `params._meta`, so that the server's span joins the caller's trace.
        """
        telemetry = herald.telemetry.active
        if telemetry is None:
            return await self._request(method, params)
        name = (params or {}).get("name")
        attributes: dict[str, Any] = {
            names.METHOD: method,
            **names.target_attributes(method, name if isinstance(name, str) else None),
        }
        return await telemetry.request(
            method, params, attributes, lambda sent: self._request(method, sent), _server_refusal
        )

    async def call_tool(self, name: str, arguments: JSONObject | None = None) -> JSONObject:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}})

    async def connect(self) -> JSONObject:
        """The first connection; later ones go through `reconnect`. Returns the opening result."""
        result = await self._reopen()
        self.generation += 1
        return result

    async def reconnect(self, failed_generation: int) -> None:
        """Re-establish the connection that failed in `failed_generation`, with bounded backoff.

        Several tasks may notice the same failure (a poll and the event stream, say); the
        generation makes sure only the first of them reconnects and the others reuse it.
        Raises `ConnectionLost` when the server stays unreachable for `reconnect_timeout`.
        """
        async with self._reconnecting:
            if self.generation != failed_generation:
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.reconnect_timeout
            delay = BACKOFF_START
            failures = 0
            while True:
                try:
                    await self._reopen()
                except ConnectionLost as lost:
                    failures += 1
                    if self.on_retry is not None:
                        self.on_retry(failures, lost)
                    if loop.time() + delay > deadline:
                        raise
                    await asyncio.sleep(delay)  # backoff: the server is not back yet
                    delay = min(delay * 2, BACKOFF_MAX)
                    continue
                self.generation += 1
                if failures and self.on_reconnected is not None:
                    self.on_reconnected()
                return

    async def request_again(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """`request`, reconnecting and repeating it after a lost connection (idempotent requests only)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.reconnect_timeout
        while True:
            generation = self.generation
            try:
                return await self.request(method, params)
            except ConnectionLost:
                if loop.time() > deadline:
                    raise  # reconnecting works but the request never gets through
                await self.reconnect(generation)

    async def job_status(self, job_id: str, cursor: str | None = None) -> JSONObject:
        """`get_job_status` as structured content, surviving restarts of the server."""
        arguments: JSONObject = {"jobId": job_id}
        if cursor is not None:
            arguments["cursor"] = cursor
        result = await self.request_again("tools/call", {"name": "get_job_status", "arguments": arguments})
        if result.get("isError"):
            raise ServerError({"code": 0, "message": str(result.get("content"))})
        status: JSONObject = result["structuredContent"]
        return status

    async def job_events(
        self, job_id: str, *, tracker: JobEventTracker | None = None
    ) -> AsyncIterator[JobEvent]:
        """Every event of a job, exactly once and in order, ending with its terminal event.

        Pass a `tracker` to inspect what was rejected afterwards. The first backfill runs at
        once, because events sent before this call were only ever stored, not queued here.
        """
        tracker = tracker if tracker is not None else JobEventTracker(job_id)
        inbox: asyncio.Queue[JSONObject | None] = asyncio.Queue()
        self._inboxes.add(inbox)
        cursor: str | None = None
        quiet_for = 0.0
        try:
            while not tracker.finished:
                arrived = await _next_or_timeout(inbox, quiet_for)
                if arrived is not None:
                    params = arrived.get("params")
                    if str(arrived.get("method", "")).startswith(JOB_EVENT_PREFIX) and (
                        isinstance(params, dict) and params.get("jobId") == job_id
                    ):
                        for event in tracker.accept(params):
                            yield event
                    continue
                # Quiet for pollAfterMs, or the connection dropped: ask the job store.
                status = await self.job_status(job_id, cursor)
                cursor = status["nextCursor"]
                for params in status["events"]:
                    for event in tracker.accept(params):
                        yield event
                poll_after = status.get("pollAfterMs")
                if poll_after is None and not tracker.finished:
                    raise JobTrackingError(
                        f"job {job_id} ended {status.get('status')} but its events do not end it "
                        f"(rejected: {[r.reason for r in tracker.rejected]})"
                    )
                quiet_for = (poll_after or 0) / 1000
        finally:
            self._inboxes.discard(inbox)

    def _received(self, message: JSONObject) -> None:
        """A notification or server request arrived: keep it and hand it to every follower."""
        self.notifications.append(message)
        for inbox in self._inboxes:
            inbox.put_nowait(message)

    def _dropped(self) -> None:
        """The connection (or its event stream) dropped: followers backfill at once."""
        for inbox in self._inboxes:
            inbox.put_nowait(None)


async def _next_or_timeout(inbox: asyncio.Queue[JSONObject | None], quiet_for: float) -> JSONObject | None:
    """The next message, or None on a drop or when `quiet_for` seconds pass without one."""
    if quiet_for <= 0:
        try:
            return inbox.get_nowait()
        except asyncio.QueueEmpty:
            return None
    try:
        return await asyncio.wait_for(inbox.get(), quiet_for)
    except TimeoutError:
        return None
