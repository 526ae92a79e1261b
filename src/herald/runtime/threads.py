"""Run a job's CPU-bound work on a worker thread, reporting through the event loop.

A job function that computes for seconds (parsing a big file, ranking thousands of rows)
would hold the event loop while it does, however often it awaits: every other request,
every other job and the very progress it reports would wait for it. `in_thread` moves
the work to a thread of the loop's default executor. The work gets a `LoopCall`, through
which it awaits coroutine functions on the loop (report progress, save a checkpoint) and
learns that its job was stopped.

Each call through `LoopCall.run` waits for the loop to finish it, so reports stay in
order and a store that refuses one raises in the work, where it can stop. When the task
awaiting `in_thread` is cancelled (`cancel_job`, a shutdown), the work is told to stop
at its next call and the cancellation waits for the thread to end, so no work of a
stopped job goes on unseen beside the next one.

`WorkerThreads` is where a server runs the plain `def` functions it was given (tools,
resources, prompts, completers, jobs): a blocking call there (a database driver, a
`time.sleep`) holds one thread of a bounded pool, never the loop that every other request
and job shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["DEFAULT_MAX_THREADS", "LoopCall", "Stopped", "WorkerThreads", "in_thread"]

T = TypeVar("T")

logger = logging.getLogger("herald.threads")

#: Plain `def` functions one server runs at once, unless it says otherwise; more wait their turn.
DEFAULT_MAX_THREADS = 40


class Stopped(Exception):
    """Raised in the work when the task awaiting it was cancelled: the work should end."""


class LoopCall:
    """What work on a worker thread uses of the event loop that awaits it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._stop = threading.Event()

    def run(self, function: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Await `function(*args)` on the loop and return its result (or raise its error).

        `Stopped` instead, once the job was stopped.
        """
        self.check()
        return asyncio.run_coroutine_threadsafe(_awaited(function, *args), self._loop).result()

    def check(self) -> None:
        """Raise `Stopped` when the job was stopped; a loop with no other call calls it now and then."""
        if self._stop.is_set():
            raise Stopped

    def stop(self) -> None:
        self._stop.set()


async def _awaited(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    return await function(*args)


async def in_thread(work: Callable[[LoopCall], T], executor: Executor | None = None) -> T:
    """`work(call)` on a worker thread (of `executor`, else the loop's default); cancelling
    this waits for it to stop (see module notes)."""
    loop = asyncio.get_running_loop()
    call = LoopCall(loop)
    bound = functools.partial(contextvars.copy_context().run, work, call)
    running = loop.run_in_executor(executor, bound)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        call.stop()
        with contextlib.suppress(Exception):  # `Stopped`, or an error that the cancellation makes moot
            await running
        raise


class WorkerThreads:
    """The bounded pool a server's plain `def` functions run on, made on first use.

    Its own pool, not the loop's default executor: that one is sized by the machine's
    cores (six threads on two), shared with whatever else the process hands it, and a
    few slow calls there would hold up unrelated work. Calls past `limit` wait in order.
    """

    def __init__(self, limit: int = DEFAULT_MAX_THREADS) -> None:
        if limit < 1:
            raise ValueError(f"max_threads must be at least 1, not {limit}")
        self.limit = limit
        self._executor: ThreadPoolExecutor | None = None

    @property
    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.limit, thread_name_prefix="herald-sync")
        return self._executor

    async def run(self, function: Callable[..., T], /, **arguments: Any) -> T:
        """`function(**arguments)` on a thread of the pool, with this task's context variables."""
        bound = functools.partial(contextvars.copy_context().run, function, **arguments)
        return await asyncio.get_running_loop().run_in_executor(self.executor, bound)

    async def finish(self, grace: float) -> None:
        """Wait up to `grace` seconds for the calls still running (a server that stops),
        then let the threads go; a call that outlasts it is said in the log."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        waiting = asyncio.ensure_future(asyncio.to_thread(executor.shutdown, True, cancel_futures=True))
        done, _ = await asyncio.wait({waiting}, timeout=grace)
        if not done:
            logger.warning("plain def calls still ran %.0f s after the server stopped; leaving them", grace)
