"""`Membership`: a process as one of the workers that share a job store.

`JobRunner` runs job functions; this is what makes its process a worker among others. It
holds the worker's lease in the store and renews it three times per period, takes over
or fails the jobs of workers whose lease lapsed (`recover`), takes queued jobs (created
by a process that runs none) while the runner has free slots, hears the events other
processes write to a shared store, and forgets ended jobs past their retention. Its
tasks are its own and end with `stop`, which also ends the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.jobs.service import WORKER_STOPPED, JobService
from herald.jobs.store import Hear, Subscribed
from herald.runtime.context import PYTHON_LEVELS
from herald.runtime.queue_taker import QueueTaker
from herald.stores.errors import StoreError


@dataclass(frozen=True, slots=True)
class JobFunction:
    """What runs the jobs of one tool: its function, the parameter its context goes in, and
    whether it can go on from a checkpoint (`@server.job(resumable=True)`)."""

    function: Callable[..., Any]
    context_name: str | None
    resumable: bool = False


class Runner(Protocol):
    """What a worker's membership uses of the `JobRunner` that owns it."""

    service: JobService
    functions: Mapping[str, JobFunction]
    sleep: Callable[[float], Awaitable[None]]

    @property
    def closing(self) -> bool: ...

    def free_slots(self) -> int: ...

    def tools(self) -> list[str]: ...

    def runs(self, job_id: str) -> bool: ...

    def launch(
        self,
        job: JobRecord,
        function: Callable[..., Any],
        arguments: dict[str, Any],
        context_name: str | None,
        log: Callable[[str, Any], None],
        *,
        claimed: bool = False,
        resumed: bool = False,
    ) -> None: ...


logger = logging.getLogger("herald.jobs")

#: How long an ended job is kept (unless it says otherwise, as an MCP task does): a week.
DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600.0
#: How often a worker forgets the ended jobs past their retention.
PRUNE_EVERY_SECONDS = 3600.0
#: How long a worker's lease lasts unless renewed; it is renewed three times per period.
#: A worker killed without a word holds its jobs this long at most (plus one sweep period).
DEFAULT_LEASE_SECONDS = 15.0
#: How often a worker looks for queued jobs when no hint woke it (hints come on Redis and
#: from the store's own follower; this is the floor when every hint was lost).
PICK_UP_EVERY_SECONDS = 1.0
#: The longest pause between two tries to follow the store's hints once they were lost.
LONGEST_FOLLOW_PAUSE = 30.0
#: How long shutdown waits for one of the worker's own tasks to stop once cancelled.
STOP_WAIT_SECONDS: Final = 5.0


class Membership:
    """One process's part among the workers of a store; owned by its `JobRunner` (`runner`)."""

    def __init__(
        self,
        runner: Runner,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        clock: Callable[[], float] = time.time,
        takes_jobs: bool = True,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"a worker's lease must last some time, not {lease_seconds} s")
        self.runner = runner
        self.service = runner.service
        #: False for a process that only serves (`serve --no-worker`): its job tools queue
        #: the jobs they create, and workers take them. It still holds a lease, for the MCP
        #: tasks its requests run here.
        self.takes_jobs = takes_jobs
        self.lease_seconds = lease_seconds
        self.retention_seconds = retention_seconds
        self._clock = clock
        #: Renews this worker's lease and sweeps for jobs of stopped workers; owned here.
        self._heartbeat: asyncio.Task[None] | None = None
        #: Hears of events other processes write to a shared store; owned here.
        self._follower: asyncio.Task[None] | None = None
        #: Takes queued jobs when told (`_wake`) or every `PICK_UP_EVERY_SECONDS`; owned here.
        self._pick_up: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stop_hearing: Callable[[], None] = lambda: None
        queue = self.service.queue
        #: Where queued jobs come from when the store keeps a queue of its own (Redis).
        self.queue_taker = (
            QueueTaker(queue, self.service.reader, self.service.worker_id, lease_seconds)
            if queue is not None
            else None
        )

    # What the queue taker asks of a claimer (`herald.runtime.queue_taker.Claimer`).

    def free_slots(self) -> int:
        return self.runner.free_slots()

    def tools(self) -> list[str]:
        return self.runner.tools()

    def runs(self, job_id: str) -> bool:
        return self.runner.runs(job_id)

    def job_left(self, job_id: str, *, acknowledge: bool) -> None:
        """A job's run here ended: its queue entry is done with, and a slot is free."""
        if self.queue_taker is not None:
            self.queue_taker.finished(job_id, acknowledge=acknowledge)
        if self.takes_jobs:
            self._wake.set()  # for a queued job too

    async def start(self) -> list[str]:
        """Become a live worker: take a lease, recover the jobs of stopped workers, keep the lease.

        Returns the ids of the jobs recovery took over or failed. Jobs of other live
        workers (another server on the same store) are left alone. A runner that takes no
        jobs (`takes_jobs=False`) still holds a lease, for the tasks its requests run
        here, but recovers nothing and takes nothing from the queue.
        """
        loop = asyncio.get_running_loop()
        if warning := await self.service.durability_warning():
            logger.warning("%s", warning)
        await self.service.renew_lease(self.lease_seconds)
        follow = self.service.follow_writers
        if follow is not None and self._follower is None:
            self._follower = loop.create_task(self._follow(follow))
        recovered: list[str] = []
        if self.takes_jobs:
            self._stop_hearing = self.service.add_listener(self._heard)
            recovered = await self.recover()
            self._pick_up = self._pick_up or loop.create_task(self._take_queued())
        self._heartbeat = self._heartbeat or loop.create_task(self._keep_lease())
        return recovered

    async def _take_queued(self) -> None:
        """Start queued jobs while slots are free: when a hint wakes us, or every few moments."""
        while True:
            # Not `wait_for`: on Python 3.11 it swallows a cancellation that arrives as the
            # wake-up does (a job ending during shutdown), and shutdown then waits it out.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(PICK_UP_EVERY_SECONDS):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.take_queued()
            except StoreError as refused:
                logger.warning("could not look for queued jobs (%s)", refused)

    async def take_queued(self) -> list[str]:
        """Claim queued jobs (created by a process that runs none) while slots are free.

        One of several workers wins each claim (a compare-and-set on the job's sequence),
        so a job starts exactly once. Returns the ids of the jobs started here. A store
        with a queue of its own hands out the queued jobs; another is looked through.
        """
        if self.queue_taker is not None:
            return await self.queue_taker.take(self) if not self.runner.closing else []
        taken: list[str] = []
        for job in await self.service.orphaned():
            if self.runner.free_slots() <= 0:
                break
            if job.worker is not None:
                continue  # a stopped worker's job: recovery's business, once per lease period
            if await self.claim_queued(job):
                taken.append(job.job_id)
        return taken

    async def claim_queued(self, job: JobRecord) -> bool:
        """Claim a queued job (new, or handed back by a worker that stopped) and run it here;
        False if another worker claimed it first."""
        found = None if self.runner.closing else self.runner.functions.get(job.tool)
        if found is None:
            return False
        if job.status == "running" and not found.resumable:
            # Handed back by code that could go on from a checkpoint; this code cannot.
            await self.service.interrupt(job.job_id, WORKER_STOPPED)
            return False
        return await self._claim(job, found)

    async def _claim(self, job: JobRecord, found: JobFunction) -> bool:
        """Claim the job as this worker and run it here; False if another writer got it first.

        A job that was running (a stopped worker's, or one handed back) goes on from its
        last checkpoint; a pending one starts from the beginning.
        """
        claimed = await self.service.claim(job)
        if claimed is None:
            return False
        self.runner.launch(
            claimed,
            found.function,
            claimed.arguments,
            found.context_name,
            _log_to(job.job_id),
            claimed=True,
            resumed=job.status == "running",
        )
        return True

    async def _follow(self, follow: Callable[[Hear, Subscribed], Awaitable[None]]) -> None:
        """Tell listeners here of events written anywhere (a replica's job, a worker's), for good.

        A store that drops the subscription is followed again after a pause that doubles
        while it keeps failing and starts small again once hints come. Hints sent while
        none could come are lost, so each time they come again the service reads what the
        jobs it told of wrote meanwhile (`JobService.catch_up`): nothing is lost, only told
        later.
        """
        pause = 1.0

        async def subscribed() -> None:
            nonlocal pause
            pause = 1.0
            try:
                await self.service.catch_up()
            except StoreError as refused:  # the next hint of each job brings what this missed
                logger.warning("could not catch up on the events written while hints were lost (%s)", refused)

        while True:
            try:
                await follow(self.service.hear, subscribed)
            except StoreError as refused:
                logger.warning("lost the store's event hints (%s); following again in %.0f s", refused, pause)
                await self.runner.sleep(pause)
                pause = min(pause * 2, LONGEST_FOLLOW_PAUSE)

    async def recover(self) -> list[str]:
        """Take over the jobs of stopped workers that can go on, and fail the others once.

        Returns the ids of the jobs recovered either way. A job that never started, or a
        resumable one, is claimed (one claimer wins) and run here, the resumable one from
        its last checkpoint; a running job that is not resumable is failed `interrupted`.
        Only jobs of tools this worker runs are touched, and nothing once it is stopping.
        """
        recovered: list[str] = []
        if self.runner.closing:
            return recovered  # a stopping worker takes nothing on, and fails nobody's jobs
        for job in await self.service.orphaned():
            if job.worker is None:
                continue  # queued (new, or handed back): `take_queued` claims it when a slot is free
            if job.worker == self.service.worker_id:
                # Its lease looks lapsed (a renewal written late under load), but the
                # worker asking is alive: its job runs here already and must not run twice.
                continue
            found = self.runner.functions.get(job.tool)
            if found is None:
                continue  # whether it could go on is for a worker that knows its tool to say
            if found.resumable or job.status == "pending":
                if not await self._claim(job, found):
                    continue  # another worker took it, or its own worker is alive after all
                logger.info("job %s of a stopped worker goes on here", job.job_id)
                recovered.append(job.job_id)
            elif await self.service.interrupt(job.job_id, WORKER_STOPPED) is not None:
                recovered.append(job.job_id)
        taker = self.queue_taker
        if taker is not None and await taker.take_over(self):
            self._wake.set()  # the entries of queued jobs a stopped worker never claimed
        return recovered

    async def _keep_lease(self) -> None:
        """Renew the lease three times per period, and once per period recover stopped workers' jobs.

        A store that refuses a renewal is tried again at the next beat: a lapsed lease only
        lets another worker fail this one's jobs, which the runner then learns on its next
        write (the job is already ended), so nothing runs twice.
        """
        worker = self.service.worker_id
        pruned_at = -PRUNE_EVERY_SECONDS
        for beat in itertools.count(1):
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.service.renew_lease(self.lease_seconds)
                if self.queue_taker is not None:
                    await self.queue_taker.hold()
                if self.takes_jobs and beat % 3 == 0 and (recovered := await self.recover()):
                    logger.info("recovered %d job(s) of stopped workers: %s", len(recovered), recovered)
                if time.monotonic() - pruned_at >= PRUNE_EVERY_SECONDS:
                    pruned_at = time.monotonic()
                    await self.prune()
            except StoreError as refused:
                logger.warning("worker %s: could not renew its lease (%s)", worker, refused)

    async def prune(self) -> list[str]:
        """Forget the jobs that ended longer ago than their retention (see `JobStore.prune`)."""
        gone = await self.service.prune(self._clock(), self.retention_seconds)
        if gone:
            logger.info("forgot %d job(s) past their retention", len(gone))
        return gone

    def _heard(self, job: JobRecord, _: JobEvent) -> None:
        """A job was queued somewhere, or handed back: wake the pick-up."""
        if job.worker is None and not job.terminal:
            self._wake.set()

    async def stop(self) -> None:
        """Stop hearing, following and taking jobs, and end the lease (a clean shutdown)."""
        self._stop_hearing()
        follower, pick_up, heartbeat = self._follower, self._pick_up, self._heartbeat
        self._follower = self._pick_up = self._heartbeat = None
        await _stopped(follower)
        await _stopped(pick_up)
        if heartbeat is not None:
            await _stopped(heartbeat)
            with contextlib.suppress(StoreError):
                await self.service.release_lease()


async def _stopped(task: asyncio.Task[None] | None) -> None:
    """Cancel one of the worker's own tasks, if it has one, and wait for it (a bounded while).

    A task stuck in a store call that ignores cancellation must not hold shutdown up
    for ever: after `STOP_WAIT_SECONDS` it is left to the loop's end, and said.
    """
    if task is None:
        return
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_WAIT_SECONDS)
    if not done:
        logger.warning(
            "%s did not stop within %.0f s of shutdown; leaving it", task.get_name(), STOP_WAIT_SECONDS
        )
    elif not task.cancelled() and (error := task.exception()) is not None:
        logger.warning("%s had failed: %r", task.get_name(), error)


def _log_to(job_id: str) -> Callable[[str, Any], None]:
    """Where a resumed job's log lines go: the request that started it is gone, so the server log."""

    def log(level: str, data: Any) -> None:
        logger.log(PYTHON_LEVELS.get(level, logging.INFO), "job %s: %s", job_id, data)

    return log
