"""`JobContext`: what a running job function sees of its job, and `JobFailure` to fail it.

The context is not the request `Context` of `herald.server`: a job outlives the request
that started it, so it reports through `JobService` (stored events), not on a request's
outbox. That is also why it sits below the server: the runtime needs nothing of it, and
the server's job tools import it, never the other way round.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from herald.jobs.record import JobRecord
from herald.jobs.service import JobService
from herald.stores.errors import StoreError

#: Where a job's result documents are served (`herald.server.jobs` serves the template).
RESULT_TEMPLATE = "herald://jobs/{job_id}/{name}"


class JobFailure(Exception):
    """Raised by a job function to fail its job with a code, a message and a hint."""

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


class JobContext:
    """What a running job function sees of its job."""

    def __init__(self, service: JobService, job: JobRecord, log: Callable[[str, Any], None]) -> None:
        self.service = service
        self.job_id = job.job_id
        self.arguments = job.arguments
        #: Set when the job is asked to stop; the function is also cancelled at its next await.
        self.cancel_requested = asyncio.Event()
        self._log = log
        self.result_uri: str | None = None
        self.summary: str | None = None
        #: The first write of this job the store refused; from then on the job is doomed.
        self.store_failure: StoreError | None = None
        #: Set once the function has stopped and the runner is recording how the job ended.
        self.ending = False

    async def report_progress(self, percentage: float, stage: str, eta_seconds: float | None = None) -> None:
        """Record progress. It must not decrease; `IllegalTransition` says so if it does.

        If the store refuses the write, `StoreError` is raised here and again at every later
        write: a job whose progress cannot be saved is stopped, not left to run unseen.
        """
        with self._watching_the_store():
            await self.service.progress(self.job_id, percentage, stage, eta_seconds)

    def log(self, level: str, data: Any) -> None:
        """A log line about this job, for the client that started it (and the server log)."""
        self._log(level, data)

    async def save_result(self, name: str, data: bytes | str, mime_type: str) -> str:
        """Store a result document of this job; returns its resource URI."""
        body = data.encode() if isinstance(data, str) else data
        with self._watching_the_store():
            await self.service.store.put_result(self.job_id, name, mime_type, body)
        return RESULT_TEMPLATE.format(job_id=self.job_id, name=name)

    def complete(self, result_uri: str, summary: str | None = None) -> None:
        """Say how the job ended; it is recorded when the function returns."""
        self.result_uri, self.summary = result_uri, summary

    async def checkpoint(self) -> None:
        """A point where cancellation may stop the job (long CPU-bound loops call it)."""
        await asyncio.sleep(0)

    @contextlib.contextmanager
    def _watching_the_store(self) -> Iterator[None]:
        """Remember the store's first refusal, and refuse every write after it."""
        if self.store_failure is not None:
            raise StoreError("an earlier write of this job failed") from self.store_failure
        try:
            yield
        except StoreError as failure:
            self.store_failure = failure
            raise
