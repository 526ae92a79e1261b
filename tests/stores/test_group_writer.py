"""`GroupWriter`: concurrent writes share a batch; each keeps its own outcome."""

from __future__ import annotations

import asyncio

import pytest

from herald.stores.errors import StoreError
from herald.stores.group_writer import GroupWriter


class Backend:
    """Writes batches of ints; refuses odd ones alone, or a whole batch containing `broken`."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.written: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.broken: int | None = None

    async def write_many(self, batch: list[int]) -> list[Exception | None]:
        self.batches.append(batch)
        await self.gate.wait()
        if self.broken in batch:
            raise StoreError("disk full")
        self.written += [item for item in batch if item % 2 == 0]
        return [None if item % 2 == 0 else ValueError(f"odd {item}") for item in batch]


async def test_writes_made_while_one_is_in_flight_go_together_with_their_own_outcomes() -> None:
    backend = Backend()
    writer = GroupWriter(backend.write_many)
    backend.gate.clear()
    first = asyncio.ensure_future(writer.write(0))
    while not backend.batches:  # noqa: ASYNC110  # until the writer holds the first batch
        await asyncio.sleep(0)
    rest = [asyncio.ensure_future(writer.write(item)) for item in range(1, 6)]
    await asyncio.sleep(0)
    backend.gate.set()
    await first
    outcomes = await asyncio.gather(*rest, return_exceptions=True)
    assert backend.batches == [[0], [1, 2, 3, 4, 5]], "what waited went in one batch"
    assert [type(outcome).__name__ for outcome in outcomes] == ["ValueError", "NoneType"] * 2 + ["ValueError"]
    assert backend.written == [0, 2, 4]
    await writer.aclose()


async def test_a_refused_batch_refuses_each_write_with_an_error_of_its_own() -> None:
    backend = Backend()
    backend.broken = 4
    writer = GroupWriter(backend.write_many)
    backend.gate.clear()
    first = asyncio.ensure_future(writer.write(0))
    while not backend.batches:  # noqa: ASYNC110
        await asyncio.sleep(0)
    second, third = asyncio.ensure_future(writer.write(2)), asyncio.ensure_future(writer.write(4))
    await asyncio.sleep(0)
    backend.gate.set()
    await first
    errors = await asyncio.gather(second, third, return_exceptions=True)
    second_error, third_error = errors
    assert isinstance(second_error, StoreError)
    assert isinstance(third_error, StoreError)
    assert second_error is not third_error, "one error object per caller"
    assert isinstance(second_error.__cause__, StoreError), "chained to what the backend raised"
    await writer.aclose()


async def test_a_cancelled_caller_withdraws_a_waiting_write_but_waits_for_one_in_flight() -> None:
    backend = Backend()
    writer = GroupWriter(backend.write_many)
    backend.gate.clear()
    in_flight = asyncio.ensure_future(writer.write(0))
    while not backend.batches:  # noqa: ASYNC110
        await asyncio.sleep(0)
    waiting = asyncio.ensure_future(writer.write(2))
    await asyncio.sleep(0)
    waiting.cancel()
    in_flight.cancel()
    await asyncio.sleep(0)
    assert not in_flight.done(), "a write being written is waited for"
    backend.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await in_flight
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert backend.written == [0], "the written one happened; the withdrawn one never did"
    await writer.aclose()
    with pytest.raises(StoreError, match="closed"):
        await writer.write(4)


async def test_a_batch_cut_short_answers_every_caller_rather_than_leaving_them_waiting() -> None:
    backend = Backend()
    writer = GroupWriter(backend.write_many)
    backend.gate.clear()  # the batch never finishes by itself
    calls = [asyncio.ensure_future(writer.write(item)) for item in (0, 2)]
    while not backend.batches:  # noqa: ASYNC110
        await asyncio.sleep(0)
    assert writer._writer is not None
    writer._writer.cancel()  # as at the loop's end
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(outcome, StoreError) and "cut short" in str(outcome) for outcome in outcomes)
