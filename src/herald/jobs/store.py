"""The job store: the port `JobService` writes through. The jobs package defines it and the
stores (`herald.stores`: memory, SQLite) implement it, so jobs never import a store.

A job's new state and the event that led to it are written in one step, so a reader
never sees an event without its state or the other way round, and an event is stored
before anyone is told of it.

What started a job (its arguments above all, which can be a whole file) is written once,
by `create`; each later event writes only the job's status (`STATUS_FIELDS`), so the cost
of an event never grows with the job's input. A store that fails raises
`herald.stores.StoreError`.

Several processes may share one store (two servers on one SQLite file, replicas on
Redis), so a write is a compare-and-set: `record` stores an event only while the job is
still at the sequence before it, and raises `JobChanged` when another writer got there
first. And every process that runs jobs is a *worker* with a lease it renews
(`renew_lease`); a job names its worker, and only jobs whose worker's lease has lapsed
are `orphaned`: recovery never touches a live worker's jobs.

A store may also keep a queue of its own for the jobs created with no worker
(`JobQueue`: on Redis, a Stream read by a consumer group). Workers then read new jobs
from it instead of looking through every unfinished job, and take over what a stopped
worker had read (`XAUTOCLAIM`). The queue only hands out job ids: whether a job may be
taken is still the job's own compare-and-set, and whether its worker lives is its lease.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord


class Hear(Protocol):
    """What a store that other processes write too tells of their writes (`follow_writers`).

    `JobService.hear` is one: events of `job_id` up to `sequence` were written; for a job
    the listener has told nothing of, it tells them from after `since` (by default, event
    `sequence` alone).
    """

    async def __call__(self, job_id: str, sequence: int, since: int | None = None) -> None: ...


#: What `follow_writers` calls when it starts to tell of other processes' writes, and again
#: whenever it starts again after it could not (Redis came back): what was written in
#: between is the caller's to catch up on (`JobService.catch_up`).
Subscribed = Callable[[], Awaitable[None]]


class JobChanged(Exception):
    """Another writer recorded an event of this job first: read the job again and decide anew.

    Internal to `JobService`, which always handles it; it never reaches a client.
    """

    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id!r} changed under this write")
        self.job_id = job_id


class JobReader(Protocol):
    """What of a job store may be read by code outside the job wing, which never writes.

    `herald.runtime.Jobs.reader` hands this out: every write goes through `JobService`,
    and a holder of this port has no way around it.
    """

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        """The job's events after `sequence`, oldest first."""

    async def job_ids(self, owner: str | None = None) -> list[str]:
        """Ids of every job (or of those `owner` started), oldest first."""

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None: ...


class JobStore(JobReader, Protocol):
    #: Whether the jobs outlive this process (a file, a server): then a job its worker hands
    #: back at a clean shutdown is taken up again later. False for the in-memory store.
    durable: bool

    async def create(self, job: JobRecord, event: JobEvent) -> None:
        """Store a new job, arguments and all, together with its first event."""

    async def record(self, job: JobRecord, event: JobEvent) -> None:
        """Store the job's changed status (`STATUS_FIELDS` only) with the event that changed it.

        Only if the stored job is still at `event.sequence - 1`; otherwise nothing is
        written and `JobChanged` is raised. The rest of `job` is not written again: it is
        what `create` stored. The same as `record_chain([(job, event)])`.
        """

    async def record_chain(self, chain: list[tuple[JobRecord, JobEvent]]) -> None:
        """Store several changes of one job, in order, all or none.

        Each item is the job as an event left it, and that event; their sequences follow
        each other. Written only if the stored job is at the sequence before the first
        (else `JobChanged`, and nothing is written); the job's status becomes the last's.
        This is how a job's progress is written behind its function (`JobService`).
        """

    async def unfinished(self) -> list[JobRecord]:
        """Jobs not yet completed, failed or cancelled, oldest first."""

    async def renew_lease(self, worker: str, seconds: float) -> None:
        """`worker` is alive for `seconds` from now (the first call creates its lease)."""

    async def release_lease(self, worker: str) -> None:
        """`worker` has stopped: its lease ends now (a clean shutdown)."""

    async def orphaned(self) -> list[JobRecord]:
        """Unfinished jobs no live worker holds (no worker, or one whose lease has lapsed)."""

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        """Keep a resumable job's latest checkpoint (replacing the one before)."""

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        """The job's latest checkpoint, or None if it saved none."""

    async def prune(self, now: float, retention: float) -> list[str]:
        """Forget jobs that ended more than their retention ago; returns their ids.

        A job's retention is its own `retain_seconds`, else `retention`; `now` is seconds
        since the epoch. Its events, results and checkpoint go with it, and the store
        remembers only that it expired (`expired`).
        """

    async def expired(self, job_id: str) -> bool:
        """Whether `job_id` named a job that `prune` forgot."""

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One job of a store's queue, as handed to one worker: acknowledged once it is done with."""

    entry: str
    job_id: str
    tool: str


@runtime_checkable
class JobQueue(Protocol):
    """A store's queues of jobs created with no worker (`create` adds them), one per tool.

    A worker reads the queues of the tools it runs, so it is never handed a job it cannot
    run. An entry handed to a worker stays that worker's until acknowledged; while the job
    runs, the worker says so with every lease renewal (`hold_queued`). An entry nobody
    held for `idle_seconds` (its worker stopped) is handed to another (`take_over_queued`).
    """

    async def read_queue(self, worker: str, tools: list[str], count: int) -> list[QueueEntry]:
        """Up to `count` entries of these tools never handed to any worker, now this worker's."""

    async def take_over_queued(
        self, worker: str, tools: list[str], idle_seconds: float, count: int
    ) -> list[QueueEntry]:
        """Up to `count` entries of these tools no worker held for `idle_seconds`, now this worker's."""

    async def hold_queued(self, worker: str, entries: list[QueueEntry]) -> None:
        """This worker still works on these entries' jobs (they are not idle)."""

    async def acknowledge_queued(self, entries: list[QueueEntry]) -> None:
        """Done with these entries: their jobs ended, or were never this worker's to run."""
