"""`JobContext`: what a running job function sees of its job, and `JobFailure` to fail it.

The context is not the request `Context` of `herald.server`: a job outlives the request
that started it, so it reports through `JobService` (stored events), not on a request's
outbox. That is also why it sits below the server: the runtime needs nothing of it, and
the server's job tools import it, never the other way round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson

from herald.jobs.documents import Packing, pack, unpack
from herald.jobs.record import JobRecord
from herald.jobs.service import JobService, JobTakenOver
from herald.stores.errors import StoreError

#: MCP (syslog) severities in Python's logging levels; syslog has more steps than Python.
PYTHON_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

#: Documents from this size up are packed on a worker thread, not on the event loop.
BIG_DOCUMENT: Final = 256 * 1024

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

    def __init__(
        self,
        service: JobService,
        job: JobRecord,
        log: Callable[[str, Any], None],
        *,
        resumed: bool = False,
        lifespan: Any = None,
    ) -> None:
        self.service = service
        #: What the server's lifespan yielded (`Server(lifespan=...)`), or None without one.
        self.lifespan = lifespan
        self.job_id = job.job_id
        self.arguments = job.arguments
        #: True when this run took the job over from a worker that stopped: the function
        #: starts again, and `resume_state` is what it last passed to `checkpoint`.
        self.resumed = resumed
        self.resume_state: Any = None
        #: Progress already recorded by the run before; a resumed run redoing that work
        #: reports below it, which is not news, so those reports are not recorded.
        self._recorded_percentage = job.percentage if resumed else 0.0
        #: Set when the job is asked to stop; the function is also cancelled at its next await.
        self.cancel_requested = asyncio.Event()
        self._log = log
        self.result_uri: str | None = None
        self.summary: str | None = None
        #: The first write of this job the store refused; from then on the job is doomed.
        self.store_failure: StoreError | None = None
        #: Set once the function has stopped and the runner is recording how the job ended.
        self.ending = False
        #: Set when another worker claimed the job while it ran here: the run stops, silently.
        self.taken_over = False

    async def report_progress(self, percentage: float, stage: str, eta_seconds: float | None = None) -> None:
        """Record progress. It must not decrease; `IllegalTransition` says so if it does.

        The event is stored soon after the call returns (behind the function, see
        `JobService`). If the store refuses it, `StoreError` is raised at the next write once
        the refusal is known (at the latest `MAX_WRITTEN_BEHIND` reports later, or when the job
        ends), and again at every write after it: a job whose progress cannot be saved is
        stopped, not left to run unseen.
        """
        if self.resumed and percentage < self._recorded_percentage:
            return  # redoing work the stopped worker had reported
        with self._watching_the_store():
            await self.service.progress(self.job_id, percentage, stage, eta_seconds)

    async def saved(self) -> None:
        """Wait until every progress event reported so far is stored (before a side effect
        that must not happen unless they are); `StoreError` if the store refused one."""
        with self._watching_the_store():
            await self.service.settle(self.job_id)

    def log(self, level: str, data: Any) -> None:
        """A log line about this job, for the client that started it (and the server log)."""
        self._log(level, data)

    async def save_result(self, name: str, data: bytes | str, mime_type: str) -> str:
        """Store a result document of this job; returns its resource URI.

        It is stored compressed where that pays (`herald.jobs.documents`), packed on a
        worker thread when big, and read back as it was given.
        """
        body = data.encode() if isinstance(data, str) else data
        if len(body) < BIG_DOCUMENT:
            stored_type, stored = pack(mime_type, body)
        else:
            stored_type, stored = await asyncio.to_thread(pack, mime_type, body)
        with self._watching_the_store():
            await self.service.put_result(self.job_id, name, stored_type, stored)
        return RESULT_TEMPLATE.format(job_id=self.job_id, name=name)

    async def save_packed_result(self, name: str, packing: Packing) -> str:
        """Store a document this job packed as it wrote it (`herald.jobs.documents.Packing`),
        for one too big to hold whole; returns its resource URI. Finishes the packing."""
        stored_type, stored = packing.finish()
        with self._watching_the_store():
            await self.service.put_result(self.job_id, name, stored_type, stored)
        return RESULT_TEMPLATE.format(job_id=self.job_id, name=name)

    async def read_result(self, name: str) -> bytes | None:
        """A document kept beside this job, as it was saved: one this job saved, or one a
        tool left for it from any replica (a widget's file part, say); None if there is none."""
        found = await self.service.reader.get_result(self.job_id, name)
        if found is None:
            return None
        if len(found[1]) < BIG_DOCUMENT:
            return unpack(*found)[1]
        return (await asyncio.to_thread(unpack, *found))[1]

    def complete(self, result_uri: str, summary: str | None = None) -> None:
        """Say how the job ended; it is recorded when the function returns."""
        self.result_uri, self.summary = result_uri, summary

    async def checkpoint(self, state: Any = None) -> None:
        """A point where cancellation may stop the job; with `state`, also where it may resume.

        Long CPU-bound loops call it to let cancellation in. A resumable job
        (`@server.job(resumable=True)`) passes what it needs to go on from here (JSON
        data: rows done so far, say): it is stored, and if this worker stops, the worker
        that takes the job over calls the function again with `resume_state` set to it.
        """
        if state is not None:
            with self._watching_the_store():
                await self.service.save_checkpoint(self.job_id, orjson.dumps(state))
        await asyncio.sleep(0)

    async def load_checkpoint(self) -> None:
        """Read the last checkpoint into `resume_state` (a resumed run, before its function runs)."""
        with self._watching_the_store():
            saved = await self.service.load_checkpoint(self.job_id)
        self.resume_state = orjson.loads(saved) if saved is not None else None

    @contextlib.contextmanager
    def _watching_the_store(self) -> Iterator[None]:
        """Remember the store's first refusal, and refuse every write after it; the same once
        another worker took the job over (its results and checkpoints are that worker's)."""
        if self.taken_over:
            raise JobTakenOver(self.job_id, "another worker")
        if self.store_failure is not None:
            raise StoreError("an earlier write of this job failed") from self.store_failure
        try:
            yield
        except JobTakenOver:
            self.taken_over = True
            raise
        except StoreError as failure:
            self.store_failure = failure
            raise
