"""`JobService`: the only writer of jobs. Every change goes through the state machine,
is stored together with its event, and only then is announced to subscribers.

Other processes may write the same store: a change is decided on the job as read, and if
another writer recorded an event first (`JobChanged`), the job is read again and the
change decided anew, so a job's events form one sequence with no two writers' facts
interleaved wrongly (a cancel from one replica and progress from the worker, say).

Progress is written behind the job's function. `progress` decides the event at once and
hands it to the job's writer, which stores the events gathered so far as one chain
(`JobStore.record_chain`: all or none, on the state expected before the first) and then
tells them, in order; the function goes on meanwhile, so one job reports faster than one
store round trip per event. Every other change (start, completion, failure,
cancellation) first waits until the job's progress is stored, then is stored itself
before the call returns. A chain the store refuses is dropped whole: another writer
changed the job (the next change reads it afresh, and what that writer wrote is told),
or the store failed (the next change of the job raises that error). At most
`MAX_WRITTEN_BEHIND` events wait; a function that reports faster waits for the store.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import herald.telemetry
from herald.jobs.events import TERMINAL_KINDS, JobEvent, timestamp
from herald.jobs.machine import IllegalTransition, JobInput, Outcome, apply
from herald.jobs.record import JobRecord
from herald.jobs.store import Hear, JobChanged, JobQueue, JobReader, JobStore, Subscribed
from herald.listeners import Listeners

JobListener = Callable[[JobRecord, JobEvent], None]

logger = logging.getLogger("herald.jobs")

#: The error code of a job that was running when its server stopped.
INTERRUPTED = "interrupted"
#: The error code of a job stopped because the store refused to save it.
STORE_ERROR = "store_error"
#: What a client is told it can do about an interrupted job: nothing was wrong with it.
RESTART_HINT = "Start the job again; its earlier events stay available."
#: Why recovery fails a job: the worker that held it stopped (its lease lapsed).
WORKER_STOPPED = "The server stopped while this job was running."
#: The stage a resumed job reports when another worker takes it over.
RESUMED = "resumed after its worker stopped"
#: The stage a job reports when its worker stops cleanly and hands it back to the queue.
HANDED_BACK = "waiting for a worker: its server stopped"
#: The stage a job reports when its own worker resumes it after the store refused a write.
RESUMED_AFTER_STORE_ERROR = "resumed after a storage error"
#: How many jobs' last told sequence is remembered (the oldest are forgotten first).
REMEMBERED_JOBS = 10_000
#: How often one change is decided again because other writers keep getting there first.
MAX_WRITE_ATTEMPTS = 64
#: How many progress events of one job may wait to be stored before `progress` waits too.
MAX_WRITTEN_BEHIND = 1000

Change = tuple[JobRecord, JobEvent]


@dataclass(slots=True)
class _Behind:
    """One job's progress written behind its function: a chain being stored, the next gathering."""

    gathering: list[Change] = field(default_factory=list)
    #: Stores the gathered chains one after the other; owned here, ends once none is left.
    writer: asyncio.Task[None] | None = None
    #: Why the store refused a chain; the job's next change deals with it.
    failure: Exception | None = None
    #: The latest sequence another process was heard to write while a chain was being stored.
    heard: int = 0


class UnknownJob(LookupError):
    """No job has this id."""


class JobTakenOver(IllegalTransition):
    """Another worker holds the job now: this process's run of it must stop, recording nothing.

    A worker whose lease lapsed while it was alive (its loop blocked past the lease, say)
    finds its job claimed by another at its next write: its progress and its ending are
    refused, so one job never has two runs writing to it.
    """

    def __init__(self, job_id: str, worker: str) -> None:
        super().__init__(f"job {job_id!r} is held by worker {worker} now")
        self.job_id = job_id
        self.worker = worker


class ExpiredJob(UnknownJob):
    """The job ended longer ago than it was to be kept, and has been forgotten."""


#: A job id is a capability (it is all a caller needs to read or cancel a job when no one is
#: authenticated): 128 bits from the operating system's CSPRNG, as for any bearer secret.
JOB_ID_BYTES = 16


class JobService:
    def __init__(
        self,
        store: JobStore,
        *,
        clock: Callable[[], str] = timestamp,
        new_id: Callable[[], str] = lambda: secrets.token_hex(JOB_ID_BYTES),
        worker_id: str | None = None,
    ) -> None:
        self._store = store
        #: This process as a worker: the jobs it creates are its own until it stops.
        self.worker_id = worker_id or f"w-{secrets.token_hex(8)}"
        self.clock = clock
        self.new_id = new_id
        self._listeners: Listeners[[JobRecord, JobEvent]] = Listeners()
        self._locks: dict[str, asyncio.Lock] = {}
        #: Each unfinished job as this service last wrote it. A change starts from it instead
        #: of reading the store again; if another writer changed the job since, the
        #: compare-and-set refuses the write and the job is read afresh.
        self._written: dict[str, JobRecord] = {}
        #: The last sequence told to listeners, per job (the most recent jobs only), so that
        #: an event heard from another process (`hear`) is told once.
        self._told: collections.OrderedDict[str, int] = collections.OrderedDict()
        #: The jobs whose progress is being written behind their functions.
        self._behind: dict[str, _Behind] = {}
        #: The jobs told of whose last told event did not end them (of those in `_told`):
        #: what `catch_up` reads again after hints may have been lost.
        self._open: set[str] = set()

    def add_listener(self, listener: JobListener) -> Callable[[], None]:
        """Hear every job event this service tells, once stored; returns the function that stops it."""
        return self._listeners.add(listener)

    # -- the store, seen from outside: read-only, or through the writes below -------------------

    @property
    def reader(self) -> JobReader:
        """The store as code outside the job wing may use it: to read, never to write."""
        return self._store

    @property
    def durable(self) -> bool:
        """Whether the jobs outlive this process (see `JobStore.durable`)."""
        return self._store.durable

    @property
    def queue(self) -> JobQueue | None:
        """The store's own queue of jobs created with no worker, where it keeps one (Redis)."""
        return self._store if isinstance(self._store, JobQueue) else None

    @property
    def follow_writers(self) -> Callable[[Hear, Subscribed], Awaitable[None]] | None:
        """How to hear of other processes' writes, for a store that others write too."""
        follow: Callable[[Hear, Subscribed], Awaitable[None]] | None
        follow = getattr(self._store, "follow_writers", None)
        return follow

    async def durability_warning(self) -> str | None:
        """What the store says would lose jobs on its restart (Redis without persistence), if anything."""
        check = getattr(self._store, "durability_warning", None)
        return await check() if check is not None else None

    async def aclose(self) -> None:
        await self._store.aclose()

    # -- what a job keeps beside its events: result documents and checkpoints -----------------

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        await self._store.put_result(job_id, name, mime_type, data)

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        await self._store.save_checkpoint(job_id, state)

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        return await self._store.load_checkpoint(job_id)

    # -- this process as a worker among workers ----------------------------------------------------

    async def renew_lease(self, seconds: float) -> None:
        await self._store.renew_lease(self.worker_id, seconds)

    async def release_lease(self) -> None:
        await self._store.release_lease(self.worker_id)

    async def orphaned(self) -> list[JobRecord]:
        """Unfinished jobs no live worker holds (see `JobStore.orphaned`)."""
        return await self._store.orphaned()

    async def unfinished(self) -> list[JobRecord]:
        return await self._store.unfinished()

    async def prune(self, now: float, retention: float) -> list[str]:
        """Forget jobs that ended more than their retention ago (see `JobStore.prune`)."""
        return await self._store.prune(now, retention)

    async def create(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        owner: str | None = None,
        progress_token: str | int | None = None,
        retain_seconds: float | None = None,
        queued: bool = False,
    ) -> JobRecord:
        """A new `pending` job: this worker's, or with `queued`, no one's until a worker claims it."""
        now = self.clock()
        job = JobRecord(
            job_id=self.new_id(),
            tool=tool,
            created_at=now,
            updated_at=now,
            owner=owner,
            progress_token=progress_token,
            arguments=arguments,
            sequence=1,
            worker=None if queued else self.worker_id,
            retain_seconds=retain_seconds,
        )
        if (telemetry := herald.telemetry.active) is not None:
            job.trace_context = telemetry.carrier() or None  # the call's: its run joins that trace
        event = JobEvent(job.job_id, 1, "created", now, {"tool": tool, "status": "pending"})
        await self._stored(self._store.create(job, event))
        self._written[job.job_id] = dataclasses.replace(job)
        self._announce(job, event)
        return job

    async def start(self, job_id: str) -> JobEvent | None:
        return await self._change(job_id, JobInput.START, "started", lambda job: {"status": "running"})

    async def progress(
        self, job_id: str, percentage: float, stage: str, eta_seconds: float | None = None
    ) -> JobEvent | None:
        def payload(job: JobRecord) -> dict[str, Any]:
            job.eta_seconds = eta_seconds
            found: dict[str, Any] = {"percentage": percentage, "stage": stage}
            if eta_seconds is not None:
                found["etaSeconds"] = eta_seconds
            return found

        return await self._change(
            job_id, JobInput.PROGRESS, "progress", payload, percentage, stage, behind=True, fenced=True
        )

    async def complete(self, job_id: str, result_uri: str, summary: str | None = None) -> JobEvent | None:
        def payload(job: JobRecord) -> dict[str, Any]:
            job.result_uri, job.summary = result_uri, summary
            found: dict[str, Any] = {"status": "completed", "resultResourceId": result_uri}
            if summary is not None:
                found["summary"] = summary
            return found

        return await self._change(job_id, JobInput.COMPLETE, "completed", payload, fenced=True)

    async def fail(
        self, job_id: str, code: str, message: str, hint: str | None = None, *, fenced: bool = False
    ) -> JobEvent | None:
        """Fail the job; `fenced` when its own run reports it (refused once another worker holds it)."""
        error = {"code": code, "message": message, **({"hint": hint} if hint else {})}

        def payload(job: JobRecord) -> dict[str, Any]:
            job.error = error
            return {"status": "failed", "error": error}

        return await self._change(job_id, JobInput.FAIL, "failed", payload, fenced=fenced)

    async def cancel(self, job_id: str, reason: str | None = None) -> JobEvent | None:
        def payload(job: JobRecord) -> dict[str, Any]:
            return {"status": "cancelled", **({"reason": reason} if reason else {})}

        return await self._change(job_id, JobInput.CANCEL, "cancelled", payload)

    async def get(self, job_id: str) -> JobRecord:
        job = await self._store.get(job_id)
        if job is None:
            raise ExpiredJob(job_id) if await self._store.expired(job_id) else UnknownJob(job_id)
        return job

    async def claim(self, job: JobRecord, stage: str = RESUMED) -> JobRecord | None:
        """Take over an orphaned or queued job as this worker; None if another writer got to it first.

        The claim is an event, so that exactly one of several claimers wins the
        compare-and-set: a pending job is started, a running one reports that it resumes
        (at the progress it had, so progress never goes back, with `stage` saying why). It
        is tried once: a job that changed since `orphaned()` read it has a live worker, or
        is taken.
        """
        now = self.clock()
        claimed = JobRecord.from_json(job.to_json())
        claimed.worker, claimed.updated_at = self.worker_id, now
        claimed.sequence += 1
        if job.status == "pending":
            claimed.status = "running"
            event = JobEvent(job.job_id, claimed.sequence, "started", now, {"status": "running"})
        elif job.status == "running":
            claimed.stage = stage
            payload = {"percentage": job.percentage, "stage": stage}
            event = JobEvent(job.job_id, claimed.sequence, "progress", now, payload)
        else:
            return None
        try:
            await self._stored(self._store.record(claimed, event))
        except JobChanged:
            return None
        behind = self._behind.get(job.job_id)
        if behind is not None and behind.writer is None:
            del self._behind[job.job_id]  # a refusal an earlier run here never read is past
        self._written[job.job_id] = dataclasses.replace(claimed)
        self._announce(claimed, event)
        return claimed

    async def hand_back(self, job_id: str) -> JobEvent | None:
        """The job's own run stops cleanly (its server is shutting down): queue it again.

        Its progress is stored first; then one event, at the progress it had, says it waits
        for a worker and leaves it with none, which queues it: another worker (or this one,
        started again) claims it and goes on from its last checkpoint. Fenced, like every
        change a run reports: once another worker holds the job, `JobTakenOver`.
        """
        await self.settle(job_id)
        job = self._written.get(job_id) or await self.get(job_id)

        def payload(job: JobRecord) -> dict[str, Any]:
            job.worker = None
            return {"percentage": job.percentage, "stage": HANDED_BACK}

        return await self._change(
            job_id, JobInput.PROGRESS, "progress", payload, job.percentage, HANDED_BACK, fenced=True
        )

    async def interrupt(self, job_id: str, message: str, *, fenced: bool = False) -> JobEvent | None:
        """Fail a job its server could not finish (code `interrupted`).

        An interruption is not a cancellation: nobody asked for it, and the job itself was
        fine, so the hint says it can simply be started again.
        """
        return await self.fail(job_id, INTERRUPTED, message, RESTART_HINT, fenced=fenced)

    async def _change(
        self,
        job_id: str,
        event_input: JobInput,
        kind: str,
        payload: Callable[[JobRecord], dict[str, Any]],
        percentage: float | None = None,
        stage: str | None = None,
        *,
        behind: bool = False,
        fenced: bool = False,
    ) -> JobEvent | None:
        """Apply one input; returns the event, or None when a terminal state absorbed it.

        With `behind` (progress) the event is returned once decided, and stored and told
        soon after; otherwise once stored and told, after every event before it. A
        `fenced` change (what only the job's run reports: progress, its ending) is refused
        with `JobTakenOver` once another worker holds the job.
        """
        async with self._locks.setdefault(job_id, asyncio.Lock()):
            await self._settle_behind(job_id, wait=not behind)
            for _ in range(MAX_WRITE_ATTEMPTS):
                job = self._written.pop(job_id, None) or await self.get(job_id)
                if fenced and job.worker not in (None, self.worker_id) and not job.terminal:
                    raise JobTakenOver(job_id, job.worker)
                outcome, state = apply(job.state, event_input, percentage, stage)
                if outcome is Outcome.ABSORB:
                    return None
                now = self.clock()
                job.status, job.percentage, job.stage = state.status.value, state.percentage, state.stage
                job.sequence += 1
                job.updated_at = now
                event = JobEvent(job_id, job.sequence, kind, now, payload(job))
                if behind:
                    self._write_behind(job, event)  # its writer stores and tells it
                    break
                try:
                    await self._stored(self._store.record(job, event))
                except JobChanged:
                    continue  # another process wrote first: decide again on what it wrote
                break
            else:
                raise JobChanged(job_id)
            if state.status.terminal:  # never for progress, which `behind` is
                self._locks.pop(job_id, None)
            else:
                self._written[job_id] = dataclasses.replace(job)  # a copy: listeners get `job`
        if behind:
            # The call did not wait for the store: give the loop (and the job's writer) a turn,
            # as a function reporting from a busy loop did when each report waited.
            await asyncio.sleep(0)
        else:
            self._announce(job, event)
        return event

    async def settle(self, job_id: str) -> None:
        """Wait until the job's progress written behind is stored; raise what refused it."""
        async with self._locks.setdefault(job_id, asyncio.Lock()):
            await self._settle_behind(job_id, wait=True)

    def _write_behind(self, job: JobRecord, event: JobEvent) -> None:
        behind = self._behind.setdefault(job.job_id, _Behind())
        behind.gathering.append((job, event))
        if behind.writer is None:
            behind.writer = asyncio.get_running_loop().create_task(self._write_chains(job.job_id, behind))

    async def _write_chains(self, job_id: str, behind: _Behind) -> None:
        """Store what gathered, a chain at a time, telling each once stored; stop at a refusal.

        After a refusal, and after hints of other writers heard meanwhile, it tells what the
        store holds beyond what was told, before it ends: the job's next change waits for
        that (`_settle_behind`), so nothing another writer wrote is passed over.
        """
        try:
            refused_one = False
            while behind.gathering:
                chain, behind.gathering = behind.gathering, []
                try:
                    await self._stored(self._store.record_chain(chain), len(chain))
                except Exception as refused:  # the next change of the job deals with it
                    behind.failure, refused_one = refused, True
                    behind.gathering.clear()
                    self._written.pop(job_id, None)  # decided on a state that was not the store's
                    break
                for job, event in chain:
                    self._announce(job, event)
            for _ in range(2):  # once more for the hints heard while the first look ran
                if not refused_one and behind.heard <= self._told.get(job_id, 0):
                    break
                refused_one = False
                await self._tell_stored(job_id, None)
        except Exception as unread:  # a store error: the next hint, or the job's next change, reads again
            logger.warning("could not read job %s after another writer's change (%s)", job_id, unread)
        finally:
            behind.writer = None

    async def _settle_behind(self, job_id: str, *, wait: bool) -> None:
        """Deal with the job's progress written behind: wait for it (`wait`, or too much of it
        gathered), and raise what refused it, unless another writer did (then go on afresh)."""
        behind = self._behind.get(job_id)
        if behind is None:
            return
        must_wait = wait or behind.failure is not None or len(behind.gathering) >= MAX_WRITTEN_BEHIND
        if must_wait and behind.writer is not None:
            await asyncio.shield(behind.writer)  # a refused one is telling what the store holds
        failure, behind.failure = behind.failure, None
        if behind.writer is None:
            del self._behind[job_id]
        if failure is not None and not isinstance(failure, JobChanged):
            raise failure

    @staticmethod
    async def _stored(writing: Awaitable[None], events: int = 1) -> None:
        """Await a store write; while telemetry is on, measure it and count its events."""
        telemetry = herald.telemetry.active
        if telemetry is None:
            await writing
            return
        started = time.perf_counter()
        await writing
        telemetry.store_written(time.perf_counter() - started, events)

    def _announce(self, job: JobRecord, event: JobEvent) -> None:
        if event.sequence <= self._told.get(job.job_id, 0):
            return  # told already (a hint of this process's own write, or a repeated one)
        if (telemetry := herald.telemetry.active) is not None:
            telemetry.job_event(job.job_id, event.kind, event.payload, event.kind in TERMINAL_KINDS)
        self._told[job.job_id] = event.sequence
        self._told.move_to_end(job.job_id)
        if event.kind in TERMINAL_KINDS:
            self._open.discard(job.job_id)
        else:
            self._open.add(job.job_id)
        if len(self._told) > REMEMBERED_JOBS:
            self._open.discard(self._told.popitem(last=False)[0])
        self._listeners.tell(job, event)

    async def catch_up(self) -> None:
        """Tell what other processes wrote while their hints could not arrive (a store that
        came back): for every job told of and not seen to end, what the store holds beyond
        what was told. Jobs nobody here has heard of are nobody's business here."""
        for job_id in list(self._open):
            job = await self._store.get(job_id)
            if job is None:
                self._open.discard(job_id)  # gone with the store's contents, or forgotten
            elif job.sequence > self._told.get(job_id, 0):
                await self.hear(job_id, job.sequence)

    async def hear(self, job_id: str, sequence: int, since: int | None = None) -> None:
        """Events of `job_id` up to `sequence` were written, perhaps by another process: tell what is new.

        The events come from the store, so listeners here hear a job that runs in another
        process (a replica, a worker) exactly as one that runs here, in order and once.
        For a job this service has told nothing of, the telling starts after `since` (by
        default, with event `sequence` itself).
        """
        told = self._told.get(job_id)
        if told is not None and sequence <= told:
            return
        behind = self._behind.get(job_id)
        if behind is not None and behind.writer is not None:
            # This process's own chain may be what was heard; its writer tells it, or on a
            # refusal hears this again once the chain is settled.
            behind.heard = max(behind.heard, sequence)
            return
        self._written.pop(job_id, None)  # another writer: the next change reads the job afresh
        await self._tell_stored(
            job_id, told if told is not None else since if since is not None else sequence - 1
        )

    async def _tell_stored(self, job_id: str, after: int | None) -> None:
        """Tell the job's stored events after `after` (by default, after what was told).

        The job is read after its events, so the record told with them is at least as new
        as the last: a listener that hears an ending sees an ended job. (Read before, it
        could miss an ending another process wrote between the two reads.)
        """
        start = after if after is not None else self._told.get(job_id, 0)
        events = await self._store.events_after(job_id, start)
        job = await self._store.get(job_id)
        if job is None:
            return
        for event in events:
            self._announce(job, event)
