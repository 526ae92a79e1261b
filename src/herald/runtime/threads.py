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
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["LoopCall", "Stopped", "in_thread"]

T = TypeVar("T")


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


async def in_thread(work: Callable[[LoopCall], T]) -> T:
    """`work(call)` on a worker thread; cancelling this waits for it to stop (see module notes)."""
    call = LoopCall(asyncio.get_running_loop())
    running = asyncio.ensure_future(asyncio.to_thread(work, call))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        call.stop()
        with contextlib.suppress(Exception):  # `Stopped`, or an error that the cancellation makes moot
            await running
        raise
