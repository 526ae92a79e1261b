"""How a worker takes jobs from a store that keeps its own queue (`JobQueue`: Redis).

The queue hands each queued job to one worker: a new one, or one a worker handed back
when it stopped cleanly (a running job with no worker, which goes on from its checkpoint).
The worker claims the job with the job's own compare-and-set, as it would a job it found
by looking; the entry stays the worker's while the job runs (held with every lease
renewal) and is acknowledged when the job ends. An entry a stopped worker held goes
idle, and the next worker to recover takes it over: a queued job that was never claimed
is claimed there, one whose job recovery took over is held by its new worker, and any
other is acknowledged. Whether a job's worker lives is always its lease, never the queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from herald.jobs.record import JobRecord
from herald.jobs.store import JobQueue, JobReader, QueueEntry

logger = logging.getLogger("herald.jobs")

#: How many idle entries one recovery takes over at most (the next one takes the rest).
TAKE_OVER_AT_ONCE = 100


class Claimer(Protocol):
    """What the queue taker needs of the runner."""

    def free_slots(self) -> int: ...

    def tools(self) -> list[str]:
        """The tools whose jobs this worker runs (the queues it reads)."""

    def runs(self, job_id: str) -> bool: ...

    async def claim_queued(self, job: JobRecord) -> bool:
        """Claim a queued job and run it here; False if another worker claimed it first."""


class QueueTaker:
    """One worker's entries of the store's queue: read, held, acknowledged, taken over."""

    def __init__(
        self,
        queue: JobQueue,
        store: JobReader,
        worker: str,
        lease_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.queue = queue
        self.store = store
        self.worker = worker
        self.lease_seconds = lease_seconds
        self._clock = clock
        #: The entry of each job this worker runs from the queue.
        self._running: dict[str, QueueEntry] = {}
        #: Entries read but not claimed yet (no free slot, or the job not written yet), with
        #: when they were first read.
        self._waiting: dict[str, tuple[QueueEntry, float]] = {}
        self._done: list[QueueEntry] = []

    def finished(self, job_id: str, *, acknowledge: bool = True) -> None:
        """A job's run here ended: its entry is acknowledged at the next take (unless the job
        was taken over: then the entry is the other worker's to acknowledge)."""
        if (entry := self._running.pop(job_id, None)) is not None and acknowledge:
            self._done.append(entry)

    async def take(self, claimer: Claimer) -> list[str]:
        """Claim queued jobs while slots are free; returns the ids of those started here."""
        done, self._done = self._done, []
        await self.queue.acknowledge_queued(done)
        waiting = [entry for entry, _ in self._waiting.values()]
        wanted = claimer.free_slots() - len(waiting)
        fresh = await self.queue.read_queue(self.worker, claimer.tools(), wanted) if wanted > 0 else []
        now = self._clock()
        for entry in fresh:
            self._waiting[entry.entry] = (entry, now)
        taken: list[str] = []
        for entry in [*waiting, *fresh]:
            if claimer.free_slots() <= 0:
                break
            if await self._take(claimer, entry, now):
                taken.append(entry.job_id)
        await self.queue.acknowledge_queued(self._done)
        self._done = []
        return taken

    async def _take(self, claimer: Claimer, entry: QueueEntry, now: float) -> bool:
        job = await self.store.get(entry.job_id)
        if job is None:
            # Its replica adds the entry first, then the job: wait a lease for the job.
            if now - self._waiting[entry.entry][1] > self.lease_seconds:
                self._forget(entry)
            return False
        if job.terminal or job.worker is not None:
            self._forget(entry)  # claimed by recovery elsewhere, or ended: nothing to run
            return False
        if not await claimer.claim_queued(job):
            self._forget(entry)  # another worker won the claim
            return False
        del self._waiting[entry.entry]
        self._running[job.job_id] = entry
        return True

    def _forget(self, entry: QueueEntry) -> None:
        del self._waiting[entry.entry]
        self._done.append(entry)

    async def hold(self) -> None:
        """With each lease renewal: the entries of the jobs running here are not idle."""
        waiting = [entry for entry, _ in self._waiting.values()]
        await self.queue.hold_queued(self.worker, [*self._running.values(), *waiting])

    async def take_over(self, claimer: Claimer) -> list[str]:
        """Take over the entries stopped workers held (after recovery of their jobs)."""
        tools = claimer.tools()
        idle = await self.queue.take_over_queued(self.worker, tools, self.lease_seconds, TAKE_OVER_AT_ONCE)
        now, done = self._clock(), []
        for entry in idle:
            if claimer.runs(entry.job_id):  # recovery took the job over here just now
                self._running[entry.job_id] = entry
                continue
            job = await self.store.get(entry.job_id)
            if job is not None and not job.terminal and job.worker is None:
                self._waiting[entry.entry] = (entry, now)  # read, never claimed: claim it
            else:
                done.append(entry)
        await self.queue.acknowledge_queued(done)
        if idle:
            logger.info("took over %d queue entr(ies) of stopped workers", len(idle))
        return [entry.job_id for entry in idle]
