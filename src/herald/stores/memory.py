"""In-process stores: fast and simple, for one process and for tests."""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
from collections.abc import Callable

from herald.jobs.events import JobEvent
from herald.jobs.record import STATUS_FIELDS, JobRecord, epoch_seconds
from herald.jobs.store import JobChanged
from herald.stores.errors import JobMissing, StoreError
from herald.stores.eventlog import JobEventReference, StoredEvent
from herald.stores.sessions import HearMessage, SessionRecord


class _MemoryStream:
    """One stream's events in order, and where each job event of it sits."""

    __slots__ = ("events", "job_positions")

    def __init__(self) -> None:
        self.events: list[bytes | JobEventReference] = []
        self.job_positions: dict[JobEventReference, int] = {}


class MemoryEventLog:
    """An `EventLog` in a dict; everything is lost with the process."""

    def __init__(self) -> None:
        self._streams: dict[str, dict[str, _MemoryStream]] = {}

    def _stream(self, session: str, stream: str) -> _MemoryStream:
        streams = self._streams.setdefault(session, {})
        if (found := streams.get(stream)) is None:
            found = streams[stream] = _MemoryStream()
        return found

    async def append(self, session: str, stream: str, data: bytes) -> int:
        events = self._stream(session, stream).events
        events.append(data)
        return len(events)

    async def append_job_event(self, session: str, stream: str, job_id: str, sequence: int) -> int:
        found = self._stream(session, stream)
        reference = JobEventReference(job_id, sequence)
        found.events.append(reference)
        found.job_positions.setdefault(reference, len(found.events))
        return len(found.events)

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        found = self._streams.get(session, {}).get(stream)
        start = max(position, 0)
        return [
            StoredEvent(index, event) if isinstance(event, bytes) else StoredEvent(index, job_event=event)
            for index, event in enumerate(found.events[start:] if found else (), start + 1)
        ]

    async def position_of_job_event(
        self, session: str, stream: str, job_id: str, sequence: int
    ) -> int | None:
        found = self._streams.get(session, {}).get(stream)
        return found.job_positions.get(JobEventReference(job_id, sequence)) if found else None

    async def forget(self, session: str) -> None:
        self._streams.pop(session, None)

    async def forget_stream(self, session: str, stream: str) -> None:
        self._streams.get(session, {}).pop(stream, None)

    async def aclose(self) -> None:
        self._streams.clear()


class MemoryJobStore:
    """A `JobStore` in dicts; jobs are lost with the process."""

    durable = False

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._leases: dict[str, float] = {}
        self._jobs: dict[str, JobRecord] = {}
        self._events: dict[str, list[JobEvent]] = {}
        self._results: dict[tuple[str, str], tuple[str, bytes]] = {}
        self._checkpoints: dict[str, bytes] = {}
        self._expired: set[str] = set()

    async def create(self, job: JobRecord, event: JobEvent) -> None:
        if job.job_id in self._jobs:
            raise StoreError(f"a job {job.job_id!r} exists already")
        self._jobs[job.job_id] = copy.deepcopy(job)
        self._events[job.job_id] = [event]

    async def record(self, job: JobRecord, event: JobEvent) -> None:
        await self.record_chain([(job, event)])

    async def record_chain(self, chain: list[tuple[JobRecord, JobEvent]]) -> None:
        # Only the status is copied, as the SQLite store writes only the status row: a
        # change to anything else after `create` is lost the same way in both.
        last, first = chain[-1][0], chain[0][1]
        stored = self._jobs.get(last.job_id)
        if stored is None:
            raise JobMissing(last.job_id)
        if stored.sequence != first.sequence - 1:
            raise JobChanged(last.job_id)
        for name in STATUS_FIELDS:
            setattr(stored, name, copy.deepcopy(getattr(last, name)))
        self._events[last.job_id].extend(event for _, event in chain)

    async def get(self, job_id: str) -> JobRecord | None:
        job = self._jobs.get(job_id)
        return copy.deepcopy(job) if job is not None else None

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        return [event for event in self._events.get(job_id, []) if event.sequence > sequence]

    async def unfinished(self) -> list[JobRecord]:
        return [copy.deepcopy(job) for job in self._jobs.values() if not job.terminal]

    async def renew_lease(self, worker: str, seconds: float) -> None:
        self._leases[worker] = self._clock() + seconds

    async def release_lease(self, worker: str) -> None:
        self._leases.pop(worker, None)

    async def orphaned(self) -> list[JobRecord]:
        now = self._clock()
        return [
            copy.deepcopy(job)
            for job in self._jobs.values()
            if not job.terminal and (job.worker is None or self._leases.get(job.worker, now) <= now)
        ]

    async def job_ids(self, owner: str | None = None) -> list[str]:
        return [job_id for job_id, job in self._jobs.items() if owner is None or job.owner == owner]

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        self._checkpoints[job_id] = state

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        return self._checkpoints.get(job_id)

    async def prune(self, now: float, retention: float) -> list[str]:
        gone = [
            job.job_id
            for job in self._jobs.values()
            if job.terminal and epoch_seconds(job.updated_at) + (job.retain_seconds or retention) < now
        ]
        for job_id in gone:
            del self._jobs[job_id]
            self._events.pop(job_id, None)
            self._checkpoints.pop(job_id, None)
            for key in [key for key in self._results if key[0] == job_id]:
                del self._results[key]
            self._expired.add(job_id)
        return gone

    async def expired(self, job_id: str) -> bool:
        return job_id in self._expired

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        self._results[(job_id, name)] = (mime_type, data)

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        return self._results.get((job_id, name))

    async def aclose(self) -> None:
        return None


class MemorySessionStore:
    """A `SessionStore` in a dict: for one process, and for tests of the ones that are shared."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sessions: dict[str, tuple[bytes, float]] = {}
        self._key = secrets.token_bytes(32)
        self._followers: set[asyncio.Queue[bytes]] = set()

    async def save(self, record: SessionRecord, ttl: float) -> None:
        self._sessions[record.session_id] = (record.to_json(), self._clock() + ttl)

    async def load(self, session_id: str, ttl: float | None) -> SessionRecord | None:
        found = self._sessions.get(session_id)
        if found is None or found[1] <= self._clock():
            self._sessions.pop(session_id, None)
            return None
        if ttl is not None:
            self._sessions[session_id] = (found[0], self._clock() + ttl)
        return SessionRecord.from_json(session_id, found[0])

    async def delete(self, session_id: str) -> bool:
        found = self._sessions.pop(session_id, None)
        return found is not None and found[1] > self._clock()

    async def shared_key(self) -> bytes:
        return self._key

    async def publish(self, message: bytes) -> None:
        for follower in self._followers:
            follower.put_nowait(message)

    async def follow(self, hear: HearMessage) -> None:
        heard: asyncio.Queue[bytes] = asyncio.Queue()
        self._followers.add(heard)
        try:
            while True:
                await hear(await heard.get())
        finally:
            self._followers.discard(heard)

    async def aclose(self) -> None:
        self._sessions.clear()
