"""`Jobs`: the one door to a server's jobs.

Everything outside the job wing (the job tools, MCP tasks, `subscriptions/listen`, the HTTP
streams, a worker process) reaches jobs through here. It owns the store, the `JobService`
that is the store's only writer, the `JobRunner` that runs job functions and keeps this
process a worker among workers, and the listeners of every job, of an owner's jobs and of
one job. What others may read of the store is the `JobReader` port (`reader`), which has
no way to write.

The recipes that several front ends share are written once: `start` (create a job, then
run it here or leave it queued for a worker), `visible` (a job the caller may see, or
`UnknownJob` as if it did not exist), `cancel` (stop it where it runs, else record the
cancellation) and `until_ended`.

The service and the runner are made on first use, from the knobs set by then. The knobs
the runner reads as it runs (how many jobs run at once, how long ended jobs are kept)
take effect at once; the ones it reads when it is made (its lease, whether it takes jobs)
refuse a change once it exists, rather than ignoring it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from herald.jobs.events import TERMINAL_KINDS, JobEvent, timestamp
from herald.jobs.machine import IllegalTransition
from herald.jobs.record import JobRecord
from herald.jobs.service import ExpiredJob, JobListener, JobService, UnknownJob
from herald.jobs.store import JobReader, JobStore
from herald.listeners import Listeners, ListenersByKey
from herald.runtime.membership import DEFAULT_LEASE_SECONDS, DEFAULT_RETENTION_SECONDS, JobFunction
from herald.runtime.runner import (
    DEFAULT_SHUTDOWN_GRACE_SECONDS,
    JobRunner,
    ShuttingDown,
    created_job,
    default_max_running_jobs,
    launch_job,
)
from herald.stores.memory import MemoryJobStore

__all__ = ["ExpiredJob", "Jobs", "UnknownJob"]

logger = logging.getLogger("herald.jobs")

#: How soon a client polling a running job should ask again, unless told otherwise.
DEFAULT_POLL_AFTER_MS = 500

#: Why a job cancelled by a client's request ended.
CANCELLED_ON_REQUEST = "cancelled on request"


class Jobs:
    """A server's jobs: their store, writer, runner and listeners, behind one door."""

    def __init__(
        self,
        *,
        max_running: int | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        shutdown_grace_seconds: float = DEFAULT_SHUTDOWN_GRACE_SECONDS,
        takes_jobs: bool = True,
        clock: Callable[[], str] = timestamp,
        new_id: Callable[[], str] | None = None,
        poll_after_ms: int = DEFAULT_POLL_AFTER_MS,
    ) -> None:
        self._max_running = max_running
        self._lease_seconds = lease_seconds
        self._retention_seconds = retention_seconds
        #: How long a clean shutdown lets jobs that cannot be handed on (not resumable) finish
        #: before it fails them `interrupted`; read when the server stops.
        self.shutdown_grace_seconds = shutdown_grace_seconds
        self._takes_jobs = takes_jobs
        #: How soon a client polling a running job should ask again (`pollAfterMs` of
        #: `get_job_status`); read at every answer, so a change takes effect at once.
        self.poll_after_ms = poll_after_ms
        self._clock = clock
        self._new_id = new_id
        #: The job function of each job tool, for the runner and for workers that take
        #: queued jobs of it from the store.
        self.functions: dict[str, JobFunction] = {}
        self._store: JobStore | None = None
        self._service: JobService | None = None
        self._runner: JobRunner | None = None
        self._lifespan: Any = None
        self._listeners: Listeners[[JobRecord, JobEvent]] = Listeners()
        #: Who follows the jobs of an owner (connections, `true` listens), and who follows
        #: one job (listens that name it, `tasks/*` waiting for it).
        self._owned: ListenersByKey[[JobRecord, JobEvent]] = ListenersByKey()
        self._named: ListenersByKey[[JobRecord, JobEvent]] = ListenersByKey()

    # -- the knobs -----------------------------------------------------------------------------

    @property
    def max_running(self) -> int | None:
        """How many jobs run at once; later ones wait `pending` (None: eight per core)."""
        return self._max_running if self._runner is None else self._runner.max_running

    @max_running.setter
    def max_running(self, limit: int | None) -> None:
        if self._runner is not None:
            self._runner.max_running = default_max_running_jobs() if limit is None else limit
        self._max_running = limit

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan yielded: `JobContext.lifespan` of every job run here."""
        return self._lifespan

    @lifespan.setter
    def lifespan(self, state: Any) -> None:
        if self._runner is not None:
            self._runner.lifespan = state
        self._lifespan = state

    @property
    def retention_seconds(self) -> float:
        """How long ended jobs are kept before they are forgotten (an MCP task keeps its ttl)."""
        return self._retention_seconds

    @retention_seconds.setter
    def retention_seconds(self, seconds: float) -> None:
        if self._runner is not None:
            self._runner.membership.retention_seconds = seconds
        self._retention_seconds = seconds

    @property
    def lease_seconds(self) -> float:
        """How long this process holds its jobs without renewing its lease (see `JobRunner`)."""
        return self._lease_seconds

    @lease_seconds.setter
    def lease_seconds(self, seconds: float) -> None:
        self._before_runner("the job lease")
        self._lease_seconds = seconds

    @property
    def takes_jobs(self) -> bool:
        """False for a replica that only serves: its job tools queue jobs, and workers (the
        processes with `takes_jobs`, `giftgenius worker`) run them."""
        return self._takes_jobs

    @takes_jobs.setter
    def takes_jobs(self, takes: bool) -> None:
        self._before_runner("whether this server runs jobs")
        self._takes_jobs = takes

    def _before_runner(self, what: str) -> None:
        """A knob the runner reads once: changing it later would be silently ignored."""
        if self._runner is not None:
            raise RuntimeError(f"choose {what} before the server starts jobs")

    def use_store(self, store: JobStore) -> None:
        """Keep jobs, their events and results in `store` (the default is in memory)."""
        if self._service is not None:
            raise RuntimeError("choose the job store before the server starts jobs")
        self._store = store

    def add_function(self, tool: str, function: JobFunction) -> None:
        """Run `tool`'s jobs with `function`; a server with a job tool keeps jobs (in memory, by default)."""
        self.functions[tool] = function
        if self._store is None:
            self._store = MemoryJobStore()

    # -- the parts, made on first use ------------------------------------------------------------

    @property
    def in_use(self) -> bool:
        """Whether this server keeps jobs at all (a job tool, a store, a task)."""
        return self._store is not None or self._service is not None

    @property
    def service(self) -> JobService:
        """The store's only writer. The job wing and tests use it; front ends use this door."""
        if self._service is None:
            options: dict[str, Any] = {"clock": self._clock}
            if self._new_id is not None:
                options["new_id"] = self._new_id
            self._service = JobService(self._store or MemoryJobStore(), **options)
            self._service.add_listener(self._tell)
        return self._service

    @property
    def runner(self) -> JobRunner:
        """What runs job functions here, and keeps this process a worker among workers."""
        if self._runner is None:
            self._runner = JobRunner(
                self.service,
                max_running=self._max_running,
                lease_seconds=self._lease_seconds,
                retention_seconds=self._retention_seconds,
                takes_jobs=self._takes_jobs,
            )
            self._runner.functions = self.functions
            self._runner.lifespan = self._lifespan
        return self._runner

    @property
    def reader(self) -> JobReader:
        """The store, to read: jobs, their events and their results."""
        return self.service.reader

    @property
    def worker_id(self) -> str:
        return self.service.worker_id

    @property
    def accepting(self) -> bool:
        """False once shutdown has begun: no job may start."""
        return self._runner is None or self._runner.accepting

    async def start_up(self) -> list[str]:
        """Become a worker, and take over or fail the jobs of stopped workers; their ids.

        Jobs of other live workers on the same store are left alone; the runner keeps its
        lease renewed and sweeps for stopped workers' jobs until `shut_down`.
        """
        return await self.runner.start() if self.in_use else []

    async def shut_down(self, grace: float | None = None) -> None:
        """Stop running jobs and close the store.

        Resumable jobs are handed back at once, for another worker (or this server, started
        again) to go on with from their last checkpoint; the others get `grace` seconds (by
        default `shutdown_grace_seconds`) to finish, then end `failed` with code
        `interrupted`, recorded before the store closes (see `JobRunner.aclose`).
        """
        if self._runner is not None:
            await self._runner.aclose(self.shutdown_grace_seconds if grace is None else grace)
        if self._service is not None:
            await self._service.aclose()

    def end_grace(self) -> None:
        """Cut a shutdown's grace short (a second Ctrl-C): fail what still runs now."""
        if self._runner is not None:
            self._runner.end_grace()

    # -- hearing of jobs ---------------------------------------------------------------------------

    def add_listener(
        self, listener: JobListener, *, owner: str | None = None, job_id: str | None = None
    ) -> Callable[[], None]:
        """Hear job events: every job's, or only those of the jobs `owner` started, or of `job_id`.

        Listeners of an owner or a job are filed under it (`ListenersByKey`), so an event
        costs the listeners that follow its job, whether ten or ten thousand idle
        sessions, listens and tasks follow others.
        """
        if owner is not None and job_id is not None:
            raise ValueError("follow the jobs of an owner or one job, not both")
        if owner is not None:
            return self._owned.add(owner, listener)
        if job_id is not None:
            return self._named.add(job_id, listener)
        return self._listeners.add(listener)

    def _tell(self, job: JobRecord, event: JobEvent) -> None:
        self._listeners.tell(job, event)
        if job.owner is not None:
            self._owned.tell(job.owner, job, event)
        self._named.tell(job.job_id, job, event)

    # -- the recipes -------------------------------------------------------------------------------

    async def start(
        self,
        tool: str,
        function: Callable[..., Any],
        arguments: dict[str, Any],
        *,
        context_name: str | None,
        job_log: Callable[[str], Callable[[str, Any], None]],
        owner: str | None,
        progress_token: str | int | None = None,
        retain_seconds: float | None = None,
        here: bool = False,
        before_run: Callable[[JobRecord], None] | None = None,
    ) -> JobRecord:
        """Create a job of `tool` and run `function(**arguments)` for it here, or queue it.

        A process that takes no jobs leaves it `pending` and unowned, for a worker to claim
        from the store, unless `here` (an MCP task runs its request's tool where the
        request is). `job_log(job_id)` makes the job's log; `before_run(job)` readies what
        the function will need of the new job. `ShuttingDown` once shutdown has begun (a
        job created meanwhile is failed, not left pending); `StoreUnavailable` when the
        store refused to create it.
        """
        if not self.accepting:
            raise ShuttingDown()
        runner = self.runner
        runs_here = here or runner.takes_jobs
        job = await created_job(
            self.service.create(
                tool,
                arguments,
                owner=owner,
                progress_token=progress_token,
                retain_seconds=retain_seconds,
                queued=not runs_here,
            )
        )
        if runs_here:  # else a worker claims it from the store
            if before_run is not None:
                before_run(job)
            await launch_job(runner, job, function, arguments, context_name, job_log(job.job_id))
        return job

    async def get(self, job_id: str) -> JobRecord:
        """The job; `UnknownJob` (`ExpiredJob` once forgotten) if there is none."""
        return await self.service.get(job_id)

    async def visible(self, job_id: str, viewer: str | None) -> JobRecord:
        """The job, for a caller who may see it; `UnknownJob` otherwise, as for no job at all.

        `viewer` is the caller's owner key where callers are authenticated (then only their
        own jobs are visible), or None where they are not (the id alone is enough).
        """
        job = await self.service.get(job_id)
        if viewer is not None and job.owner != viewer:
            raise UnknownJob(job_id)
        return job

    async def cancel(self, job_id: str, reason: str = CANCELLED_ON_REQUEST) -> None:
        """Stop the job where it runs here, else record its cancellation for whoever runs it.

        A job that ended meanwhile keeps its ending.
        """
        if self._runner is not None and self._runner.cancel(job_id):
            return
        try:
            await self.service.cancel(job_id, reason)
        except IllegalTransition:
            logger.info("job %s: cancellation not recorded, it had already ended", job_id)

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        """Keep a document beside the job (what an MCP task waits on, say), through its writer."""
        await self.service.put_result(job_id, name, mime_type, data)

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        return await self.reader.get_result(job_id, name)

    async def until_ended(self, job_id: str) -> JobRecord:
        """The job once it has ended (now, if it already has), heard without polling."""
        ended = asyncio.Event()

        def listener(job: JobRecord, event: JobEvent) -> None:
            if job.terminal or event.kind in TERMINAL_KINDS:
                ended.set()

        stop = self.add_listener(listener, job_id=job_id)
        try:
            job = await self.service.get(job_id)
            while not job.terminal:
                await ended.wait()
                ended.clear()
                job = await self.service.get(job_id)
            return job
        finally:
            stop()
