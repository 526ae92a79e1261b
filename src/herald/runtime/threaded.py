"""Plain `def` job functions: run on a worker thread, with a context whose calls block.

A job that is blocking code from end to end (a driver without asyncio, a long
computation) is written as a plain function. It runs on the server's worker threads
(`WorkerThreads`), and what it asks of its job (report progress, checkpoint, save a
result) goes to the event loop through `LoopCall` and waits there for the answer, so a
store that refuses a write raises in the function as it would in an async one.

Cancelling the job (`cancel_job`, a shutdown, a takeover) cannot interrupt a thread:
the function learns of it at its next call on the context, which raises `Stopped`, and
the job ends as cancelled once the thread returns. A long loop calls `checkpoint()` now
and then for that reason alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from herald.runtime.context import JobContext
from herald.runtime.threads import LoopCall, WorkerThreads, in_thread

__all__ = ["SyncJobContext", "threaded_job"]


class SyncJobContext:
    """What a plain `def` job function sees of its job: `JobContext`, with blocking calls."""

    def __init__(self, context: JobContext, call: LoopCall) -> None:
        self._context = context
        self._call = call
        self.job_id = context.job_id
        self.arguments = context.arguments
        #: True when this run took the job over from a worker that stopped (see `JobContext`).
        self.resumed = context.resumed
        self.resume_state: Any = context.resume_state
        #: What the server's lifespan yielded (`Server(lifespan=...)`), or None without one.
        self.lifespan: Any = context.lifespan

    @property
    def cancel_requested(self) -> bool:
        """True once the job was asked to stop; the next call on this context raises `Stopped`."""
        return self._context.cancel_requested.is_set()

    def report_progress(self, percentage: float, stage: str, eta_seconds: float | None = None) -> None:
        """Record progress (it must not decrease), as `JobContext.report_progress`."""
        self._call.run(self._context.report_progress, percentage, stage, eta_seconds)

    def checkpoint(self, state: Any = None) -> None:
        """A point where cancellation stops the job; with `state`, also where it may resume."""
        self._call.run(self._context.checkpoint, state)

    def saved(self) -> None:
        """Wait until every progress event reported so far is stored."""
        self._call.run(self._context.saved)

    def save_result(self, name: str, data: bytes | str, mime_type: str) -> str:
        """Store a result document of this job; returns its resource URI."""
        return self._call.run(self._context.save_result, name, data, mime_type)

    def complete(self, result_uri: str, summary: str | None = None) -> None:
        """Say how the job ended; it is recorded when the function returns."""
        self._context.complete(result_uri, summary)

    def log(self, level: str, data: Any) -> None:
        """A log line about this job, for the client that started it (and the server log)."""
        self._call.run(_log, self._context, level, data)


async def _log(context: JobContext, level: str, data: Any) -> None:
    context.log(level, data)


def threaded_job(
    function: Callable[..., Any], context_name: str | None, threads: WorkerThreads
) -> Callable[..., Any]:
    """An async job function that runs the plain `function` on one of `threads`."""

    @functools.wraps(function)
    async def run(**values: Any) -> Any:
        context = values.get(context_name) if context_name is not None else None

        def work(call: LoopCall) -> Any:
            if context_name is not None and isinstance(context, JobContext):
                values[context_name] = SyncJobContext(context, call)
            return function(**values)

        return await in_thread(work, threads.executor)

    return run
