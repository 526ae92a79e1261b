"""`StoreThread`: one thread that runs a store's blocking calls, in the order they were made.

A blocking backend (SQLite) must never run on the event loop: a file another process
has locked makes a statement wait up to its busy timeout, and every connection of the
server would wait with it. So each such store owns one `StoreThread` and hands it every
statement or transaction. One thread, not a pool, because the order of a store's
writes is part of its contract (an event is stored before the next one of its job, a
job is created before its first event): calls run one at a time, in submission order,
and a connection is only ever used by that thread.

Cancellation keeps a call all-or-nothing for its caller. A call the thread has not
started yet is withdrawn, and the caller sees `CancelledError`: nothing happened. A call
already running cannot be stopped halfway, so the caller waits for it and gets its
result, and the cancellation is delivered at the caller's next await, exactly as when the
call ran on the loop. Otherwise a write could commit while its caller believed it had
not (and, say, never announced the event it stored).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable, Mapping
from typing import TypeVar

from herald.stores.errors import StoreError, map_exceptions

T = TypeVar("T")


class StoreThread:
    """A single worker thread for one store; `aclose` stops it once the last call has run."""

    def __init__(self, name: str, errors: Mapping[type[Exception], type[Exception]]) -> None:
        self._errors = errors
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._closed = False

    def call_now(self, function: Callable[..., T], *args: object) -> T:
        """Run `function` on the thread and wait for it here (for constructors, before any loop work)."""
        return self._submit(function, *args).result()

    async def call(self, function: Callable[..., T], *args: object) -> T:
        """Run `function(*args)` on the thread; the loop goes on meanwhile."""
        submitted = self._submit(function, *args)
        waiting = asyncio.wrap_future(submitted)
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            if submitted.cancel():  # not started: withdrawn, nothing happened
                raise
            try:
                return await wait_uninterrupted(waiting)
            finally:
                deliver_cancellation_later()

    async def aclose(self, last: Callable[[], object] | None = None) -> None:
        """Refuse new calls, run `last` (closing the connection) after every call made so far,
        then stop the thread. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if last is not None:
                await asyncio.wrap_future(self._executor.submit(functools.partial(self._mapped, last)))
        finally:
            # Nothing can be queued behind `last`, so the idle thread ends at once.
            self._executor.shutdown(wait=True)

    def abandon(self) -> None:
        """Stop the thread without a last call (the store could not open its file)."""
        self._closed = True
        self._executor.shutdown(wait=True)

    def _submit(self, function: Callable[..., T], *args: object) -> concurrent.futures.Future[T]:
        if self._closed:
            raise StoreError("the store is closed")
        return self._executor.submit(functools.partial(self._mapped, function), *args)

    def _mapped(self, function: Callable[..., T], *args: object) -> T:
        with map_exceptions(self._errors):
            return function(*args)


async def wait_uninterrupted(waiting: asyncio.Future[T]) -> T:
    """Wait for a call that is already running, whatever cancellations arrive meanwhile."""
    while True:
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            if waiting.done():
                return waiting.result()
            _swallowed()


def _swallowed() -> None:
    """A second cancellation while the call finishes: `deliver_cancellation_later` re-delivers one."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def deliver_cancellation_later() -> None:
    """Re-deliver the cancellation that arrived during the call, at the caller's next await.

    `uncancel` then `cancel` keeps the task's count of pending cancellations as it was, so
    an `asyncio.timeout` around the call still recognises its own cancellation.
    """
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
        task.cancel()
