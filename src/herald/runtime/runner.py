"""`JobRunner`: runs job functions as tasks, a few at a time, and records how each ended.

Being one of the workers that share a store (the lease, recovery, the queue, following
other processes' writes) is its `Membership`'s part (`herald.runtime.membership`).

It sits beside `herald.jobs`, below the server: it knows jobs (`JobService`), the store's
one error (`StoreError`) and the protocol error a refused job answers with, and nothing
of requests, connections or tools. The server's job tools and MCP tasks hand it created
jobs through `launch_job`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

import herald.logs
import herald.telemetry
from herald.jobs.events import JobEvent
from herald.jobs.machine import IllegalTransition
from herald.jobs.record import JobRecord, epoch_seconds
from herald.jobs.service import (
    RESUMED_AFTER_STORE_ERROR,
    STORE_ERROR,
    JobService,
    JobTakenOver,
    UnknownJob,
)
from herald.protocol.errors import ProtocolError
from herald.runtime.context import JobContext, JobFailure
from herald.runtime.membership import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_RETENTION_SECONDS,
    JobFunction,
    Membership,
)
from herald.stores.errors import JobMissing, OutageLog, StoreError, StoreUnavailable

logger = logging.getLogger("herald.jobs")

#: The error message of a job that was running when its server stopped on purpose.
SHUTTING_DOWN = "Interrupted: server shutting down."
#: The error of a job stopped because the store refused to save its progress or result.
STORE_FAILED = "The job was stopped: the server could not save its progress."
STORE_FAILED_HINT = "The server's storage refused a write (a full disk, perhaps); start the job again."
#: Whether the job store takes new jobs, said once when it stops (a full disk) and once when
#: it takes them again; one for the process, as a process has one job store.
CREATING = OutageLog(logger, "create jobs in the job store")


#: How long a clean shutdown lets a job that cannot go on elsewhere (not resumable) run on
#: before it fails it `interrupted`. Resumable jobs are handed back at once.
DEFAULT_SHUTDOWN_GRACE_SECONDS = 10.0

#: How often one run resumes its job after the store refused a write before it gives up and
#: fails the job `store_error`: a store that takes writes but refuses this job's every
#: time (a result too large for it, say) must not have the job run for ever.
MAX_RESUMES_AFTER_STORE_ERROR = 5


def default_max_running_jobs() -> int:
    """How many jobs run at once unless the server says otherwise: eight per core (16 on 2).

    Every job's steps run on the server's one event loop, so past some number more jobs at
    once finish none sooner: they make each other, and every request, wait behind more job
    steps (1,000 jobs started together held pings up for seconds). But a job spends most
    of its life waiting (on the store, on a worker thread with its CPU work, whose pool
    has a few threads per core): with two per core, 1,000 small jobs polled by 50 clients
    drained in about a minute, with eight in 26 s, for slower polls (p50 40 to 56 ms).
    The rest wait, `pending`, in creation order.
    """
    return 8 * (os.cpu_count() or 1)


class ShuttingDown(ProtocolError):
    """A job arrived while the server was stopping: it is not started (it ends `interrupted`)."""

    code = -32603
    http_status = 503

    def __init__(self) -> None:
        super().__init__(
            "The server is shutting down and starts no new jobs; start the job again once it is back."
        )


Ending = Callable[[], Awaitable[object]]


class _AfterStoreError:
    """What `_work` returns for a resumable job whose store refused a write: go on from the
    last checkpoint once the store works again, instead of failing the job."""


AFTER_STORE_ERROR: Final = _AfterStoreError()


#: Endings another process may record for a job that runs here; the runner records its own
#: only after the function stopped, and records completion itself while it has not.
ENDED_ELSEWHERE = frozenset({"cancelled", "failed"})


@dataclass(slots=True)
class _Admission:
    """A launched job: what its task runs, and how it may end."""

    job: JobRecord
    function: Callable[..., Any]
    values: dict[str, Any]
    context_name: str | None
    context: JobContext
    log: Callable[[str, Any], None]
    #: Claimed (`JobService.claim`): already started; a resumed one loads its checkpoint first.
    claimed: bool = False
    #: Its function can go on from a checkpoint (`@server.job(resumable=True)`).
    resumable: bool = False
    #: How often this run went on after a store error.
    resumes: int = 0

    @property
    def job_id(self) -> str:
        return self.job.job_id


class JobRunner:
    """Runs job functions as tasks and records how each ended.

    Theory of operation: a job's task first runs the function (`_work`), which decides how
    the job ends, then records that ending (`_settle`). The ending is recorded whatever
    happens to the store: a write the store refuses (a full disk) is tried again, with
    delays that double from `retry_delay` up to `max_retry_delay`, for as long as the
    server runs, because a live server must never leave a job `running` that nothing
    runs. Only shutdown ends the retries, after one last try; the job is then an orphan of
    a stopped worker, which recovery resumes or fails. A resumable job whose store refused
    a write is not failed: its run waits until the store works again and goes on from its
    last checkpoint.

    Admission: `launch` accepts every job at once, but at most `max_running` have a task;
    the others stay `pending` in the store and wait here, in the order they were launched
    (which is the order the store created them: a job tool launches right after `create`
    returns), until a running job's task ends. A queued job cancelled is taken off the
    queue. Shutdown (`aclose`) hands on what can go on elsewhere and gives the rest a grace.
    """

    def __init__(
        self,
        service: JobService,
        *,
        max_running: int | None = None,
        retry_delay: float = 0.05,
        max_retry_delay: float = 2.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        clock: Callable[[], float] = time.time,
        takes_jobs: bool = True,
    ) -> None:
        self.service = service
        #: Set to cut the shutdown grace short (`end_grace`).
        self._grace_ended = asyncio.Event()
        #: The job function of each tool this worker runs: set by the server, which knows its
        #: job tools. A queued job of another tool is left for a worker that knows it.
        self.functions: Mapping[str, JobFunction] = {}
        #: What the server's lifespan yielded, for each job's context (set by `Jobs`).
        self.lifespan: Any = None
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        #: How the runner waits between tries (a test's clock may stand in).
        self.sleep = sleep
        self._max_running = _checked_limit(default_max_running_jobs() if max_running is None else max_running)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        #: What each task runs (the same keys as `_tasks`).
        self._started: dict[str, _Admission] = {}
        self._contexts: dict[str, JobContext] = {}
        #: Launched, not yet running, oldest first (dicts keep insertion order).
        self._queue: dict[str, _Admission] = {}
        self._closing = False
        self._stop_hearing: Callable[[], None] = lambda: None
        #: This process as one of the store's workers: lease, recovery, queue, following.
        self.membership = Membership(
            self,
            lease_seconds=lease_seconds,
            retention_seconds=retention_seconds,
            clock=clock,
            takes_jobs=takes_jobs,
        )

    @property
    def max_running(self) -> int:
        """How many jobs may run at once; raising it starts waiting jobs at once."""
        return self._max_running

    @max_running.setter
    def max_running(self, limit: int) -> None:
        self._max_running = _checked_limit(limit)
        self._admit()

    @property
    def accepting(self) -> bool:
        """False once shutdown has begun: `launch` refuses new jobs."""
        return not self._closing

    @property
    def closing(self) -> bool:
        """True once shutdown has begun: nothing new is taken on."""
        return self._closing

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
    ) -> None:
        """Accept a created (`pending`) job: run it now if a slot is free, else when one frees.

        `claimed` is for a job this worker claimed (`JobService.claim`): it is already
        running. One that had run elsewhere (`resumed`) starts again from its last
        checkpoint; a queued one starts from the beginning.

        Raises `ShuttingDown` once `aclose` has begun: nothing would run the job, and
        `aclose` may already have failed the jobs it knew of. The caller fails the job
        (`launch_job` does).
        """
        if self._closing:
            raise ShuttingDown()
        context = JobContext(self.service, job, log, resumed=resumed, lifespan=self.lifespan)
        values = dict(arguments)
        if context_name is not None:
            values[context_name] = context
        self._contexts[job.job_id] = context
        found = self.functions.get(job.tool)
        resumable = found is not None and found.resumable and found.function is function
        self._queue[job.job_id] = _Admission(
            job, function, values, context_name, context, log, claimed, resumable
        )
        self._admit()

    def _admit(self) -> None:
        """Start waiting jobs, oldest first, while slots are free."""
        while self._queue and len(self._tasks) < self._max_running and not self._closing:
            admitted = self._queue.pop(next(iter(self._queue)))
            self._start(admitted)

    def _start(self, admitted: _Admission) -> None:
        job_id = admitted.job_id
        # Owned here: `cancel` and `aclose` cancel it, and `aclose` awaits it.
        task = asyncio.get_running_loop().create_task(self._run(admitted))
        self._tasks[job_id] = task
        self._started[job_id] = admitted

        def forget(_: object) -> None:
            self._tasks.pop(job_id, None)
            self._started.pop(job_id, None)
            context = self._contexts.pop(job_id, None)
            self._admit()  # its slot is free
            # A run taken over leaves the queue entry to the worker that took the job.
            self.membership.job_left(job_id, acknowledge=context is None or not context.taken_over)

        task.add_done_callback(forget)

    async def _run(self, admitted: _Admission) -> None:
        if herald.logs.wanted:  # this task's own context: lines the job logs name it
            herald.logs.JOB.set(admitted.job_id)
        telemetry = herald.telemetry.active
        if telemetry is not None:  # this task's own context: the span is current for the run
            job, resumed = admitted.job, admitted.context.resumed
            waited = None if resumed else time.time() - epoch_seconds(job.created_at)
            telemetry.job_run_started(
                job.job_id, job.tool, job.trace_context, resumed=resumed, queued_seconds=waited
            )
        try:
            ending = await self._work(admitted)
            while isinstance(ending, _AfterStoreError):
                ending = await self._resume_after_store_error(admitted)
            admitted.context.ending = True
            if ending is not None:
                await self._settle(admitted.job_id, ending)
        finally:
            if telemetry is not None:
                telemetry.job_run_ended(admitted.job_id)

    async def _work(self, admitted: _Admission) -> Ending | _AfterStoreError | None:
        """Run the function; the ending still to record, or None when there is nothing to record."""
        service, job_id, context = self.service, admitted.job_id, admitted.context
        try:
            if admitted.claimed:  # already running: a resumed job goes on from its last checkpoint
                if context.resumed:
                    await context.load_checkpoint()
            else:
                try:
                    await service.start(job_id)
                except IllegalTransition:  # it ended (cancelled, say) while it waited for a slot
                    logger.info("job %s ended before it could start", job_id)
                    return None
            outcome = await admitted.function(**admitted.values)
            if context.store_failure is not None:  # the function caught it and went on
                raise context.store_failure
            if context.result_uri is None:
                uri = await context.save_result("result.json", orjson.dumps(outcome), "application/json")
                context.complete(uri, outcome.get("summary") if isinstance(outcome, dict) else None)
            result_uri, summary = context.result_uri, context.summary
            assert result_uri is not None
            # Recorded by `_settle`, tried again while the store refuses: the work is done.
            return lambda: service.complete(job_id, result_uri, summary)
        except (asyncio.CancelledError, JobTakenOver) as stopped:
            if context.taken_over or isinstance(stopped, JobTakenOver):
                logger.warning("job %s was taken over by another worker; its run here stops", job_id)
                return None
            # Only `cancel` (cancel_job, tasks/cancel) sets `cancel_requested`; any other
            # cancellation is the server going away (`aclose`, or the loop shutting down).
            if context.cancel_requested.is_set():
                return lambda: service.cancel(job_id, "cancelled on request")
            if self._closing and admitted.resumable and service.durable:
                return lambda: service.hand_back(job_id)
            return lambda: service.interrupt(job_id, SHUTTING_DOWN, fenced=True)
        except Exception as exc:
            if context.taken_over:  # the function made something else of `JobTakenOver`
                logger.warning("job %s was taken over by another worker; its run here stops", job_id)
                return None
            if isinstance(exc, IllegalTransition) and await self._ended_elsewhere(job_id):
                # Another server cancelled it (or recovered it) while it ran: this write was
                # refused, the function stopped, and the ending is already recorded.
                logger.info("job %s ended elsewhere while it ran; its function stopped", job_id)
                return None
            failure = exc if isinstance(exc, StoreError) else context.store_failure
            if isinstance(failure, JobMissing) or isinstance(exc, UnknownJob):
                logger.warning("job %s is gone from the store (emptied?); its run here stops", job_id)
                return None
            if failure is not None:  # whatever the function made of it, the store failed first
                if admitted.resumable and admitted.resumes < MAX_RESUMES_AFTER_STORE_ERROR:
                    logger.warning(
                        "job %s paused: the store refused a write (%s); it goes on from its last "
                        "checkpoint once the store works again",
                        job_id,
                        failure,
                    )
                    return AFTER_STORE_ERROR
                logger.warning("job %s stopped: the store refused a write (%s)", job_id, failure)
                return lambda: service.fail(job_id, STORE_ERROR, STORE_FAILED, STORE_FAILED_HINT, fenced=True)
            if isinstance(exc, JobFailure):
                code, message, hint = exc.code, exc.message, exc.hint
                return lambda: service.fail(job_id, code, message, hint, fenced=True)
            logger.exception("job %s failed", job_id)
            unexpected = f"The job failed: {type(exc).__name__}"
            return lambda: service.fail(job_id, "internal", unexpected, None, fenced=True)

    async def _resume_after_store_error(self, admitted: _Admission) -> Ending | _AfterStoreError | None:
        """Wait until the store works, claim the job again, and run it on from its checkpoint.

        Returns how that run ended. Nothing to record if the job ended or went to another
        worker meanwhile, or if the server stops first: the job is then an orphan of a
        stopped worker, and recovery resumes it as it would after a crash.
        """
        job_id, delay = admitted.job_id, self.retry_delay
        admitted.resumes += 1
        claimed = None
        while claimed is None:
            if admitted.context.cancel_requested.is_set():
                return lambda: self.service.cancel(job_id, "cancelled on request")
            try:
                job = await self.service.get(job_id)
                if job.terminal or job.worker not in (None, self.service.worker_id):
                    return None
                # None: another writer changed the job since it was read; look again.
                claimed = await self.service.claim(job, RESUMED_AFTER_STORE_ERROR)
            except UnknownJob:
                logger.warning("job %s is gone from the store (emptied?); its run here stops", job_id)
                return None
            except StoreError as refused:
                logger.info("job %s waits for the store (%s); next try in %.2f s", job_id, refused, delay)
                try:
                    await self.sleep(delay)
                except asyncio.CancelledError:
                    if not admitted.context.cancel_requested.is_set():
                        return None  # shutdown: the lease ends with it, and recovery goes on
                delay = min(delay * 2, self.max_retry_delay)
            except asyncio.CancelledError:
                if not admitted.context.cancel_requested.is_set():
                    return None
        logger.info("job %s goes on from its last checkpoint after the store error", job_id)
        context = JobContext(self.service, claimed, admitted.log, resumed=True)
        if admitted.context_name is not None:
            admitted.values[admitted.context_name] = context
        self._contexts[job_id] = admitted.context = context
        admitted.claimed = True
        return await self._work(admitted)

    async def _ended_elsewhere(self, job_id: str) -> bool:
        try:
            return (await self.service.get(job_id)).terminal
        except (StoreError, LookupError):
            return False

    async def _settle(self, job_id: str, ending: Ending) -> None:
        """Record `ending`, trying again while the store refuses, until it is recorded or we stop."""
        delay = self.retry_delay
        last_try = False
        while True:
            try:
                await ending()
                return
            except JobTakenOver:
                logger.warning(
                    "job %s was taken over by another worker; its ending here is not recorded", job_id
                )
                return
            except IllegalTransition:
                logger.info("job %s: ending not recorded: it had already ended", job_id)
                return
            except (JobMissing, UnknownJob):
                logger.warning("job %s is gone from the store (emptied?); its ending is not recorded", job_id)
                return
            except StoreError as refused:
                if last_try or self._closing:
                    logger.error(
                        "job %s: its ending was not recorded before shutdown (%s); it is left to "
                        "recovery, which resumes or fails the jobs of stopped workers",
                        job_id,
                        refused,
                    )
                    return
                logger.warning("job %s: ending not recorded (%s); next try in %.2f s", job_id, refused, delay)
            except asyncio.CancelledError:
                if last_try:
                    raise
                last_try = True  # the server is going away mid-write: one more try
                continue
            try:
                await self.sleep(delay)
            except asyncio.CancelledError:
                last_try = True  # `cancel` leaves ending jobs alone, so this is shutdown
            delay = min(delay * 2, self.max_retry_delay)

    def cancel(self, job_id: str) -> bool:
        """Stop a running job: its context's `cancel_requested` is set and its task cancelled.

        True when the runner records the ending. A job whose function has already stopped
        is only recording its ending; a cancel request changes nothing then, so its task is
        left alone. A job still waiting for a slot is taken off the queue and False is
        returned, as for a job the runner does not know: the caller records the
        cancellation (`JobService.cancel`), and nothing will start the job.
        """
        task = self._tasks.get(job_id)
        if task is None:
            if self._queue.pop(job_id, None) is not None:
                self._contexts.pop(job_id).cancel_requested.set()
            return False
        context = self._contexts[job_id]
        context.cancel_requested.set()
        if not context.ending:
            task.cancel()
        return True

    async def wait_ended(self, job_id: str) -> None:
        """Wait until the job's task has stopped (its ending recorded, or given up at shutdown).

        A job still waiting for a slot has no task yet: this returns at once for it.
        """
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.shield(task)

    @property
    def running(self) -> int:
        """Jobs with a task: running, or recording how they ended."""
        return len(self._tasks)

    @property
    def queued(self) -> int:
        """Jobs launched and still `pending`, waiting for a slot."""
        return len(self._queue)

    async def start(self) -> list[str]:
        """Become a live worker among the store's workers (see `Membership.start`); the ids
        of the stopped workers' jobs it took over or failed."""
        if self.takes_jobs:
            self._stop_hearing = self.service.add_listener(self._heard)
        if (telemetry := herald.telemetry.active) is not None:
            telemetry.watch_runner(self)
        return await self.membership.start()

    @property
    def takes_jobs(self) -> bool:
        """Whether this process runs queued jobs (see `Membership.takes_jobs`)."""
        return self.membership.takes_jobs

    def _heard(self, job: JobRecord, event: JobEvent) -> None:
        """A job that runs here ended or was taken over elsewhere: stop its function.

        Cancelled on another replica (or failed by one that took this worker for dead)
        while the function runs here: stop it now, not at its next write. This runner
        records such an ending itself only once the function has stopped (`ending`).
        Claimed by another worker (this one's lease lapsed while it lived): stop, and
        record nothing; the job is the other worker's now.
        """
        context = self._contexts.get(job.job_id)
        task = self._tasks.get(job.job_id)
        if context is None or context.ending or task is None:
            return
        if job.worker not in (None, self.service.worker_id) and not job.terminal:
            context.taken_over = True
            task.cancel()
        elif event.kind in ENDED_ELSEWHERE:
            context.cancel_requested.set()
            task.cancel()

    def free_slots(self) -> int:
        """How many more jobs could start here now."""
        return 0 if self._closing else self._max_running - len(self._tasks) - len(self._queue)

    def tools(self) -> list[str]:
        """The tools whose jobs this worker runs."""
        return list(self.functions)

    def runs(self, job_id: str) -> bool:
        """Whether the job is running, or waiting for a slot, here."""
        return job_id in self._tasks or job_id in self._queue

    async def aclose(self, grace: float = 0.0) -> None:
        """Stop the jobs here, hand on those that can go on elsewhere, and wait for each.

        A clean stop must not cost work that a crash would not:
        - a job still waiting for a slot never started here: it stays `pending`, and once
          this worker's lease has ended, the first worker to recover (this one, started
          again) starts it;
        - a resumable job's function is stopped at once, its progress stored, and the job
          handed back to the queue (`JobService.hand_back`): another worker claims it and
          goes on from its last checkpoint;
        - any other job may run on for `grace` seconds; one still running then is stopped
          and fails `interrupted` ("server shutting down"): nothing could go on with it,
          and its client can start it again.
        On a store that ends with the process (memory) nothing could take a job up later,
        so every job gets the grace and then fails `interrupted`. Then the lease ends.
        """
        self._closing = True
        durable = self.service.durable
        waiting = list(self._queue)
        self._queue.clear()
        for job_id in waiting:
            self._contexts.pop(job_id, None)
        tasks = dict(self._tasks)
        handed_back = {job_id for job_id, admitted in self._started.items() if durable and admitted.resumable}
        for job_id in handed_back:
            tasks[job_id].cancel()
        others = {task for job_id, task in tasks.items() if job_id not in handed_back}
        if others and grace > 0:
            logger.info("waiting up to %.0f s for %d job(s) to finish before stopping", grace, len(others))
            await self._wait_out_grace(others, grace)
        for task in others:
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        if not durable:
            for job_id in waiting:
                await self._settle(
                    job_id, functools.partial(self.service.interrupt, job_id, SHUTTING_DOWN, fenced=True)
                )
        self._stop_hearing()
        await self.membership.stop()

    async def _wait_out_grace(self, tasks: set[asyncio.Task[None]], grace: float) -> None:
        """Wait until the tasks end, `grace` seconds pass, or `end_grace` is called."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        # Owned here: cancelled and awaited before this returns.
        ended = loop.create_task(self._grace_ended.wait())
        try:
            while tasks and not ended.done() and (left := deadline - loop.time()) > 0:
                done, _ = await asyncio.wait(
                    {*tasks, ended}, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
                tasks = tasks - done
        finally:
            ended.cancel()
            await asyncio.gather(ended, return_exceptions=True)

    def end_grace(self) -> None:
        """Stop waiting for jobs to finish at shutdown (a second Ctrl-C): they end `interrupted` now."""
        self._grace_ended.set()


def _checked_limit(limit: int) -> int:
    if limit < 1:
        raise ValueError(f"at least one job must be able to run at a time, not {limit}")
    return limit


async def created_job(creating: Awaitable[JobRecord]) -> JobRecord:
    """The job `creating` (a `JobService.create`) made; `StoreUnavailable` if the store refused it.

    Nothing was created then, so the same call may succeed once the store writes again
    (a full disk freed), and the client is told so in a JSON-RPC error rather than the
    "internal error" of a tool that failed.
    """
    try:
        with CREATING.watching():
            return await creating
    except StoreError as refused:
        raise StoreUnavailable("The server did not start the job") from refused


async def launch_job(
    runner: JobRunner,
    job: JobRecord,
    function: Callable[..., Any],
    arguments: dict[str, Any],
    context_name: str | None,
    log: Callable[[str, Any], None],
) -> None:
    """Hand a created job to `runner`; if it is shutting down, fail the job and refuse.

    The job was already created `pending`, so it is failed `interrupted` before
    `ShuttingDown` reaches the caller: a job nothing will run must not stay pending. If
    the store has closed too, the next start fails it the same way.
    """
    try:
        runner.launch(job, function, arguments, context_name, log)
    except ShuttingDown:
        with contextlib.suppress(IllegalTransition, StoreError):
            await runner.service.interrupt(job.job_id, SHUTTING_DOWN)
        raise
