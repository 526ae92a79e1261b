"""Handshake-era HTTP sessions: minted at `initialize`, ended by DELETE or by idleness.

A session is a `Connection` (the protocol state) plus the SSE streams that belong to
it. Ids come from a CSPRNG (192 bits, URL-safe, visible ASCII). A session's tasks run
in the registry's task group (the server's lifespan), started and tracked by its
connection: closing a session cancels its requests, stops its streams, awaits its tasks
and forgets its events, so nothing it held outlives it.

With a `SessionStore` that replicas share, a session lives in the store and each
replica holds only a copy: minted on one replica, it is saved there, and any replica
that receives a request naming it loads it (`get`). A change the client makes to it
(`initialized`, `logging/setLevel`, a resource subscription) is saved before the reply
goes out (`persist`), so the client's next request finds it on any replica. A copy checks
the store at most every `REVALIDATE_SECONDS` (which also keeps the session alive there),
so a DELETE on one replica ends the session on every replica within that time. Only the
replica a client's GET stream is open on logs that stream, and it catches up from the job
store on what was written while nobody listened (`StandaloneStream.attach`).

A store that reads but cannot write (a full disk) still serves every session it holds:
reading a session needs no write, a change the store refuses stays on this replica's
copy until a later request saves it, and each such refusal is logged once, not per
request. Only what cannot exist without a write is refused: a new session (`initialize`)
and a DELETE, which the endpoint answers with 503 and a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any

import herald.telemetry
from herald.protocol.connection import SessionData
from herald.protocol.messages import RequestId
from herald.protocol.session import SessionInput
from herald.server.app import Server
from herald.server.connection import Connection
from herald.stores.errors import OutageLog, StoreError
from herald.stores.eventlog import EventLog
from herald.stores.sessions import SessionRecord, SessionStore
from herald.transports.http.streams import LOGGING, ResponseStream, StandaloneStream

#: Finished POST streams a session keeps resumable; older ones are dropped from the log.
RESUMABLE_FINISHED_STREAMS = 64
#: How long a replica serves its copy of a shared session before it asks the store again.
REVALIDATE_SECONDS = 1.0

logger = logging.getLogger("herald.http")


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
        *,
        shared: bool = False,
        record: SessionRecord | None = None,
        owner: str | None = None,
    ) -> None:
        self.id = session_id
        self.log = log
        self.standalone = StandaloneStream(
            log, session_id, spawn=self.spawn, jobs=lambda: server.jobs.reader, shared=shared
        )
        self.connection = Connection(
            server,
            self.standalone,
            max_message_bytes=max_message_bytes,
            tasks=tasks,
            owner_id=record.owner if record is not None else owner,
            transport="tcp",
        )
        self.connection.session_id = session_id
        #: The session as last saved to (or loaded from) the store, to save only changes.
        self.saved: SessionRecord | None = None
        #: When this copy last checked the session was still alive in the store.
        self.checked = 0.0
        if record is not None:
            self.adopt(record)
        self.streams: dict[str, ResponseStream] = {}
        #: Names of finished POST streams whose events are kept for late resumption, oldest first.
        self.finished: collections.deque[str] = collections.deque()
        self.last_used = time.monotonic()
        #: HTTP responses streaming for this session right now; a session in use never expires.
        self.attached = 0
        #: Requests and streams of this session being served now (`max_streams_per_session`).
        self.open_streams = 0
        self._closed = False
        if (telemetry := herald.telemetry.active) is not None:
            telemetry.sessions_changed(1)

    @property
    def protocol_version(self) -> str | None:
        return self.connection.session.protocol_version if self.connection.session else None

    def record(self) -> SessionRecord | None:
        """The session as a store keeps it; None until `initialize` has been answered."""
        session = self.connection.session
        if session is None:
            return None
        return SessionRecord(
            session_id=self.id,
            protocol_version=session.protocol_version,
            owner=self.connection.owner_id,
            client_capabilities=session.client_capabilities,
            client_info=session.client_info,
            log_level=session.log_level,
            subscriptions=sorted(session.subscriptions),
            operating=self.connection.protocol.may_notify,
        )

    def adopt(self, record: SessionRecord) -> None:
        """Take the session as the store has it (another replica may have changed it)."""
        protocol = self.connection.protocol
        if protocol.session is None:
            protocol.resume(
                SessionData(record.protocol_version, record.client_capabilities, record.client_info),
                operating=record.operating,
            )
        elif record.operating and not protocol.may_notify:
            protocol.handshake.receive(SessionInput.INITIALIZED)
        assert protocol.session is not None
        protocol.session.log_level = record.log_level
        protocol.session.subscriptions = set(record.subscriptions)
        self.saved = record

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Start a task the session owns; its failure is logged, and ends only that task."""
        return self.connection.spawn(coroutine)

    def response_stream(self, requests: set[RequestId | None]) -> ResponseStream:
        """The outbox of a POST whose answer carries the replies with these ids (`reply_ids`)."""
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
                self.spawn(_tidy(self.log.forget_stream(self.id, self.finished.popleft())))

        stream.on_finished = forget

    @property
    def busy(self) -> bool:
        return self.attached > 0 or self.connection.in_flight > 0

    async def aclose(self, *, forget: bool = True) -> None:
        """Cancel the session's requests, end its streams, await its tasks, forget its events.

        `forget=False` drops only this replica's copy: the session lives on in the store,
        and its log with it.
        """
        if self._closed:
            return
        self._closed = True
        if (telemetry := herald.telemetry.active) is not None:
            telemetry.sessions_changed(-1)
        self.connection.cancel_requests()
        # A pump ends when its stream closes; the connection then awaits what is left.
        for stream in [self.standalone, *self.streams.values()]:
            await stream.aclose()
        self.streams.clear()
        await self.connection.aclose(cancel=True)
        if forget:
            await _tidy(self.log.forget(self.id))


class SessionRegistry:
    """Every live session of this process, with expiry of idle ones.

    `async with registry:` is the server's lifespan: sessions and the expiry sweep are
    tasks of its group, and leaving the block closes every session. With a `store`, the
    sessions here are copies of the store's (see the module's docstring).
    """

    def __init__(
        self,
        server: Server,
        log: EventLog,
        *,
        ttl: float,
        max_message_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        store: SessionStore | None = None,
    ) -> None:
        self.server = server
        self.log = log
        self.ttl = ttl
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self.store = store
        #: How long a copy is served before the store is asked again (see the module docstring).
        self.revalidate_seconds = REVALIDATE_SECONDS
        #: Told the id of a shared session this replica changed or ended, so the others'
        #: copies follow at once (set by the replicas' relay).
        self.changed: Callable[[str], None] | None = None
        self._sessions: dict[str, HttpSession] = {}
        self._group: asyncio.TaskGroup | None = None
        self._expiry: asyncio.Task[None] | None = None
        #: Each kind of store call, logged once when the store starts refusing it (a full disk).
        self._reading = OutageLog(logger, "read sessions from the session store")
        self._extending = OutageLog(logger, "extend sessions' lives in the session store")
        self._saving = OutageLog(logger, "save sessions to the session store")
        self._ending = OutageLog(logger, "end sessions in the session store")

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
        if self.store is not None:
            await self.store.aclose()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, owner: str | None = None) -> HttpSession:
        """A new session; `owner` (an authenticated principal's) owns the jobs it starts."""
        return self._add(secrets.token_urlsafe(24), None, owner)

    def _add(self, session_id: str, record: SessionRecord | None, owner: str | None = None) -> HttpSession:
        if self._group is None:
            raise RuntimeError("the session registry is not running: use `async with registry`")
        session = HttpSession(
            session_id,
            self.server,
            self.log,
            self.max_message_bytes,
            self._group,
            shared=self.store is not None,
            record=record,
            owner=owner,
        )
        session.last_used = session.checked = self.clock()
        self._sessions[session.id] = session
        return session

    def held(self, session_id: str) -> HttpSession | None:
        """This replica's copy of the session, if it holds one (nothing is checked or marked)."""
        return self._sessions.get(session_id)

    async def get(self, session_id: str) -> HttpSession | None:
        """The live session with this id, marked as used now; None if unknown or expired.

        With a store, a session minted elsewhere is loaded from it, and a copy held here
        is checked against it now and then: one ended elsewhere is dropped.
        """
        session = self._sessions.get(session_id)
        now = self.clock()
        if session is not None:
            session.last_used = now
            if self.store is None or now - session.checked < self.revalidate_seconds:
                return session
        if self.store is None:
            return None
        record = await self._load_extending(session_id)
        session = self._sessions.get(session_id)  # another request may have loaded it meanwhile
        if record is None:
            await self._drop_copy(session_id)  # ended by another replica, which forgot its log
            return None
        if session is None:
            return self._add(session_id, record)
        session.checked = now
        if record != session.saved:
            session.adopt(record)
        return session

    async def _load_extending(self, session_id: str) -> SessionRecord | None:
        """The session as the store has it, its life extended there if the store can write.

        Reading a session needs no write: a store that refuses the extension (a full
        disk) is asked again for the session alone. What cannot be read fails the request.
        """
        assert self.store is not None
        try:
            with self._extending.watching():
                return await self.store.load(session_id, self.ttl)
        except StoreError:
            with self._reading.watching():
                return await self.store.load(session_id, None)

    async def persist(self, session: HttpSession) -> None:
        """Save what the client changed in the session; `StoreError` if the store refused."""
        if self.store is None:
            return
        record = session.record()
        if record is not None and record != session.saved:
            with self._saving.watching():
                await self.store.save(record, self.ttl)
            session.saved = record
            if self.changed is not None:
                self.changed(session.id)

    async def persist_if_possible(self, session: HttpSession) -> None:
        """Save what a request changed in the session, before the client hears the reply;
        if the store refuses, serve the reply all the same.

        The change holds on this replica's copy, which stays unsaved (`saved` is not
        updated), so a later request on the session saves it once the store writes again.
        """
        with contextlib.suppress(StoreError):  # `persist` has logged it
            await self.persist(session)

    async def refresh(self, session_id: str) -> None:
        """Another replica changed or ended the session: bring this replica's copy up to date."""
        session = self._sessions.get(session_id)
        if session is None or self.store is None:
            return
        with self._reading.watching():
            record = await self.store.load(session_id, None)
        if record is None:
            await self._drop_copy(session_id)
        elif record != session.saved:
            session.adopt(record)
        session.checked = self.clock()

    async def close(self, session_id: str) -> bool:
        """End the session: in the store, then here, then its log.

        The store first: if it refuses (`StoreError`), nothing has ended anywhere.
        """
        ended = False
        if self.store is not None:
            with self._ending.watching():
                ended = await self.store.delete(session_id)
            if self.changed is not None:
                self.changed(session_id)
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await session.aclose()
            return True
        if ended:
            await _tidy(self.log.forget(session_id))
        return ended

    async def discard(self, session_id: str) -> None:
        """Close a session the store never had: its `initialize` was refused, or could not be saved."""
        if (session := self._sessions.pop(session_id, None)) is not None:
            await session.aclose()

    async def expire_idle(self) -> int:
        """Close every session idle for longer than the TTL; returns how many.

        With a store, a copy idle here may be in use on another replica: only the copy is
        dropped, unless the store has let the session expire too.
        """
        deadline = self.clock() - self.ttl
        idle = [
            sid
            for sid, session in self._sessions.items()
            if session.last_used < deadline and not session.busy
        ]
        for session_id in idle:
            if self.store is not None:
                with self._reading.watching():
                    record = await self.store.load(session_id, None)
                if record is not None:
                    await self._drop_copy(session_id)
                    continue
            await self.close(session_id)
        return len(idle)

    async def _drop_copy(self, session_id: str) -> None:
        """Close this replica's copy of a shared session; the store and the log keep it."""
        if (session := self._sessions.pop(session_id, None)) is not None:
            await session.aclose(forget=False)

    async def run_expiry(self) -> None:
        """Sweep idle sessions for as long as the server runs."""
        while True:
            await asyncio.sleep(max(self.ttl / 4, 1.0))
            with contextlib.suppress(StoreError):  # logged where it failed; the next sweep tries again
                await self.expire_idle()

    async def aclose(self) -> None:
        """Close every session of this process (at shutdown): a shared one lives on in the store."""
        for session_id in list(self._sessions):
            with contextlib.suppress(Exception):
                if self.store is None:
                    await self.close(session_id)
                else:
                    await self._drop_copy(session_id)


async def _tidy(forgetting: Coroutine[Any, Any, None]) -> None:
    """Forget events the log keeps for resumption; a log that refuses (a full disk) keeps them.

    Nothing waits on this: the session has ended, or the stream is too old to resume.
    """
    with contextlib.suppress(StoreError), LOGGING.watching():
        await forgetting
