"""The job store: the port `JobService` writes through. The jobs package defines it and the
stores (`herald.stores`: memory, SQLite) implement it, so jobs never import a store.

A job's new state and the event that led to it are written in one step, so a reader
never sees an event without its state or the other way round, and an event is stored
before anyone is told of it.

What started a job (its arguments above all, which can be a whole file) is written once,
by `create`; each later event writes only the job's status (`STATUS_FIELDS`), so the cost
of an event never grows with the job's input. A store that fails raises
`herald.stores.StoreError`.
"""

from __future__ import annotations

from typing import Protocol

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord


class JobStore(Protocol):
    async def create(self, job: JobRecord, event: JobEvent) -> None:
        """Store a new job, arguments and all, together with its first event."""

    async def record(self, job: JobRecord, event: JobEvent) -> None:
        """Store the job's changed status (`STATUS_FIELDS` only) with the event that changed it.

        The rest of `job` is not written again: it is what `create` stored.
        """

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        """The job's events after `sequence`, oldest first."""

    async def unfinished(self) -> list[JobRecord]:
        """Jobs not yet completed, failed or cancelled (for recovery after a restart)."""

    async def job_ids(self, owner: str | None = None) -> list[str]:
        """Ids of every job (or of those `owner` started), oldest first."""

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None: ...

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None: ...

    async def aclose(self) -> None: ...
