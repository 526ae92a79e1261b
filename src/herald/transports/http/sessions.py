"""Handshake-era HTTP sessions: minted at `initialize`, ended by DELETE or by idleness.

A session is a `Connection` (the protocol state) plus the SSE streams that belong to
it. Ids come from a CSPRNG (192 bits, URL-safe, visible ASCII). A session's tasks run
in the registry's task group (the server's lifespan), started and tracked by its
connection: closing a session cancels its requests, stops its streams, awaits its tasks
and forgets its events, so nothing it held outlives it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any

from herald.protocol.messages import RequestId
from herald.server.app import Server
from herald.server.connection import Connection
from herald.stores.eventlog import EventLog
from herald.transports.http.streams import STANDALONE, DurableStream, ResponseStream

#: Finished POST streams a session keeps resumable; older ones are dropped from the log.
RESUMABLE_FINISHED_STREAMS = 64


class HttpSession:
    """One client's session: its connection and its streams.

    Its tasks (requests, stream pumps, log pruning) run in the server lifespan's task
    group through its connection, which tracks them, so `aclose` cancels and awaits
    exactly the session's own, and an idle session costs no task at all.
    """

    def __init__(
        self,
        session_id: str,
        server: Server,
        log: EventLog,
        max_message_bytes: int,
        tasks: asyncio.TaskGroup,
    ) -> None:
        self.id = session_id
        self.log = log
        self.standalone = DurableStream(
            log,
            session_id,
            STANDALONE,
            hold_until_started=False,
            spawn=self.spawn,
            jobs=lambda: server.job_service().store,
        )
        self.connection = Connection(
            server, self.standalone, max_message_bytes=max_message_bytes, tasks=tasks
        )
        self.streams: dict[str, ResponseStream] = {}
        #: Names of finished POST streams whose events are kept for late resumption, oldest first.
        self.finished: collections.deque[str] = collections.deque()
        self.last_used = time.monotonic()
        #: HTTP responses streaming for this session right now; a session in use never expires.
        self.attached = 0
        self._closed = False

    @property
    def protocol_version(self) -> str | None:
        return self.connection.session.protocol_version if self.connection.session else None

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Start a task the session owns; its failure is logged, and ends only that task."""
        return self.connection.spawn(coroutine)

    def response_stream(self, requests: set[RequestId]) -> ResponseStream:
        return ResponseStream(self.log, self.id, requests, spawn=self.spawn)

    def track(self, stream: ResponseStream) -> None:
        """Keep a POST's SSE stream while it runs, for clients that resume it; forget it when done.

        A finished stream's events stay in the log, which is where a late `Last-Event-ID`
        reads them from, so holding the stream itself would only leak it.
        """
        self.streams[stream.name] = stream

        def forget() -> None:
            self.streams.pop(stream.name, None)
            self.finished.append(stream.name)
            if len(self.finished) > RESUMABLE_FINISHED_STREAMS and not self._closed:
                # A client resumes a stream moments after losing it, or never: the oldest
                # finished ones go, so a long session's log stays bounded.
                self.spawn(self.log.forget_stream(self.id, self.finished.popleft()))

        stream.on_finished = forget

    @property
    def busy(self) -> bool:
        return self.attached > 0 or self.connection.in_flight > 0

    async def aclose(self) -> None:
        """Cancel the session's requests, end its streams, await its tasks, forget its events."""
        if self._closed:
            return
        self._closed = True
        self.connection.cancel_requests()
        # A pump ends when its stream closes; the connection then awaits what is left.
        for stream in [self.standalone, *self.streams.values()]:
            await stream.aclose()
        self.streams.clear()
        await self.connection.aclose(cancel=True)
        await self.log.forget(self.id)


class SessionRegistry:
    """Every live session of this process, with expiry of idle ones.

    `async with registry:` is the server's lifespan: sessions and the expiry sweep are
    tasks of its group, and leaving the block closes every session.
    """

    def __init__(
        self,
        server: Server,
        log: EventLog,
        *,
        ttl: float,
        max_message_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self.log = log
        self.ttl = ttl
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self._sessions: dict[str, HttpSession] = {}
        self._group: asyncio.TaskGroup | None = None
        self._expiry: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SessionRegistry:
        group = asyncio.TaskGroup()
        await group.__aenter__()
        self._group = group
        self._expiry = group.create_task(self.run_expiry())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        await self.aclose()
        group, self._group = self._group, None
        if group is not None:
            await group.__aexit__(None, None, None)

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self) -> HttpSession:
        if self._group is None:
            raise RuntimeError("the session registry is not running: use `async with registry`")
        session = HttpSession(
            secrets.token_urlsafe(24), self.server, self.log, self.max_message_bytes, self._group
        )
        session.last_used = self.clock()
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> HttpSession | None:
        """The live session with this id, marked as used now; None if unknown or expired."""
        session = self._sessions.get(session_id)
        if session is not None:
            session.last_used = self.clock()
        return session

    async def close(self, session_id: str) -> bool:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        await session.aclose()
        return True

    async def expire_idle(self) -> int:
        """Close every session idle for longer than the TTL; returns how many."""
        deadline = self.clock() - self.ttl
        idle = [
            sid
            for sid, session in self._sessions.items()
            if session.last_used < deadline and not session.busy
        ]
        for session_id in idle:
            await self.close(session_id)
        return len(idle)

    async def run_expiry(self) -> None:
        """Sweep idle sessions for as long as the server runs."""
        while True:
            await asyncio.sleep(max(self.ttl / 4, 1.0))
            await self.expire_idle()

    async def aclose(self) -> None:
        for session_id in list(self._sessions):
            with contextlib.suppress(Exception):
                await self.close(session_id)
