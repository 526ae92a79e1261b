"""`GroupWriter`: the writes made while one is in flight go together in the next.

A job's event is written before the next one of that job is made, so one job waits a
round trip per event. Many jobs at once need not wait for each other's: while one batch
is being written (one SQLite transaction, one Redis pipeline), the events of the other
jobs gather, and the next batch writes them all. That is a group commit: the cost of a
round trip is shared by every job that had an event ready, and one job alone pays what
it paid before.

Each write still has its own outcome (one event's compare-and-set may fail while the
others in its batch succeed), and a caller is answered only once its batch is written.
A caller cancelled while its write waits for a batch withdraws it; one cancelled while
its batch is being written waits for the outcome, and the cancellation is delivered at
its next await, as `StoreThread.call` does, so a caller never believes a write that
happened did not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from herald.stores.errors import StoreError
from herald.stores.thread import deliver_cancellation_later, wait_uninterrupted

T = TypeVar("T")

#: Writes one batch; returns, per item, the exception that refused it or None.
WriteMany = Callable[[list[T]], Awaitable[list[Exception | None]]]

#: What a caller hears whose batch was cut short: it may or may not have been written.
CUT_SHORT = "the write was cut short and may not have happened"

#: The most writes one batch carries (a longer queue goes in several).
MAX_BATCH = 256


@dataclass(slots=True)
class _Write(Generic[T]):
    item: T
    outcome: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class GroupWriter(Generic[T]):
    """Batches the writes of concurrent callers; its one task writes a batch at a time."""

    def __init__(self, write_many: WriteMany[T], *, max_batch: int = MAX_BATCH) -> None:
        self._write_many = write_many
        self._max_batch = max_batch
        self._waiting: list[_Write[T]] = []
        self._ready = asyncio.Event()
        #: Writes the batches; created by the first write, owned here, ended by `aclose`.
        self._writer: asyncio.Task[None] | None = None
        self._closed = False

    async def write(self, item: T) -> None:
        """Write `item` with whatever else is waiting; raises what refused this one item."""
        if self._closed:
            raise StoreError("the store is closed")
        write = _Write(item)
        self._waiting.append(write)
        self._ready.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_batches())
        try:
            await asyncio.shield(write.outcome)
        except asyncio.CancelledError:
            if write in self._waiting:  # not taken into a batch yet: withdrawn, nothing happened
                self._waiting.remove(write)
                raise
            try:
                await wait_uninterrupted(write.outcome)
            finally:
                deliver_cancellation_later()

    async def _write_batches(self) -> None:
        """Until closed and drained: every batch's outcome is set, whatever it raised."""
        while not (self._closed and not self._waiting):
            await self._ready.wait()
            self._ready.clear()
            while self._waiting:
                batch = self._waiting[: self._max_batch]
                del self._waiting[: self._max_batch]
                try:
                    try:
                        outcomes = await self._write_many([write.item for write in batch])
                    except Exception as refused:  # the whole batch: each caller gets its own error
                        outcomes = [refused] if len(batch) == 1 else [_each(refused) for _ in batch]
                    for write, outcome in zip(batch, outcomes, strict=True):
                        if outcome is None:
                            write.outcome.set_result(None)
                        else:
                            write.outcome.set_exception(outcome)
                finally:  # cut short (this task cancelled, say): no caller waits for ever
                    for write in batch:
                        if not write.outcome.done():
                            write.outcome.set_exception(StoreError(CUT_SHORT))

    async def aclose(self) -> None:
        """Write what is waiting, then stop; later writes are refused."""
        self._closed = True
        writer, self._writer = self._writer, None
        if writer is not None and not writer.done():
            self._ready.set()
            await writer  # it drains what waits, then ends


def _each(refused: Exception) -> Exception:
    """An error of its own for each caller of a refused batch (one object raised in many
    tasks would gather all their tracebacks), chained to what the backend raised."""
    error = StoreError(str(refused))
    error.__cause__ = refused.__cause__ if isinstance(refused, StoreError) and refused.__cause__ else refused
    return error
