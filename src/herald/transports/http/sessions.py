"""Handshake-era HTTP sessions: minted at `initialize`, ended by DELETE or by idleness.

A session is a `Connection` (the protocol state) plus the SSE streams that belong to
it. Ids come from a CSPRNG (192 bits, URL-safe, visible ASCII). Closing a session
cancels its requests, stops its streams and forgets its events, so nothing it held
outlives it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import time
from collections.abc import Callable

from herald.server.app import Server
from herald.server.connection import Connection
from herald.stores.eventlog import EventLog
from herald.transports.http.streams import STANDALONE, DurableStream, ResponseStream

#: Finished POST streams a session keeps resumable; older ones are dropped from the log.
RESUMABLE_FINISHED_STREAMS = 64


class HttpSession:
    """One client's session: its connection and its streams."""

    def __init__(self, session_id: str, server: Server, log: EventLog, max_message_bytes: int) -> None:
        self.id = session_id
        self.log = log
        self.standalone = DurableStream(log, session_id, STANDALONE, hold_until_started=False)
        self.connection = Connection(server, self.standalone, max_message_bytes=max_message_bytes)
        self.streams: dict[str, ResponseStream] = {}
        #: Names of finished POST streams whose events are kept for late resumption, oldest first.
        self.finished: collections.deque[str] = collections.deque()
        self._pruning: set[asyncio.Future[None]] = set()
        self.last_used = time.monotonic()
        #: HTTP responses streaming for this session right now; a session in use never expires.
        self.attached = 0

    @property
    def protocol_version(self) -> str | None:
        return self.connection.session.protocol_version if self.connection.session else None

    def track(self, stream: ResponseStream) -> None:
        """Keep a POST's SSE stream while it runs, for clients that resume it; forget it when done.

        A finished stream's events stay in the log, which is where a late `Last-Event-ID`
        reads them from, so holding the stream itself would only leak it.
        """
        self.streams[stream.name] = stream

        def forget() -> None:
            self.streams.pop(stream.name, None)
            self.finished.append(stream.name)
            if len(self.finished) > RESUMABLE_FINISHED_STREAMS:
                # A client resumes a stream moments after losing it, or never: the oldest
                # finished ones go, so a long session's log stays bounded.
                self._pruning.add(
                    asyncio.ensure_future(self.log.forget_stream(self.id, self.finished.popleft()))
                )
                self._pruning = {task for task in self._pruning if not task.done()}

        stream.on_finished = forget

    @property
    def busy(self) -> bool:
        return self.attached > 0 or self.connection.in_flight > 0

    async def aclose(self) -> None:
        await self.connection.aclose(cancel=True)
        for stream in [self.standalone, *self.streams.values()]:
            await stream.aclose()
        self.streams.clear()
        await asyncio.gather(*self._pruning, return_exceptions=True)
        await self.log.forget(self.id)


class SessionRegistry:
    """Every live session of this process, with expiry of idle ones."""

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

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self) -> HttpSession:
        session = HttpSession(secrets.token_urlsafe(24), self.server, self.log, self.max_message_bytes)
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
