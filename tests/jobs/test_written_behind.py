"""Progress written behind the job's function: stored in order, told only once stored.

`JobService.progress` returns once the event is decided; the job's writer stores the
events gathered meanwhile as one chain, then tells them. These tests hold the store's
writes at a gate to see what is told before and after, and put a second service on the
same SQLite file, as a second process would be, to refuse a chain.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from herald.jobs.events import JobEvent
from herald.jobs.machine import IllegalTransition
from herald.jobs.record import JobRecord
from herald.jobs.service import MAX_WRITTEN_BEHIND, RESUMED, JobService, JobTakenOver
from herald.runtime import JobContext, JobFailure, JobRunner
from herald.stores.errors import StoreError
from herald.stores.memory import MemoryJobStore
from herald.stores.sqlite import SqliteJobStore


class GatedStore(MemoryJobStore):
    """The memory store, whose chains wait at a gate (the test opens it), or are refused."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.chains: list[list[int]] = []
        self.refuse = False

    async def record_chain(self, chain: list[tuple[JobRecord, JobEvent]]) -> None:
        await self.gate.wait()
        if self.refuse:
            raise StoreError("disk full")
        self.chains.append([event.sequence for _, event in chain])
        await super().record_chain(chain)


async def started(service: JobService) -> str:
    job = await service.create("work", {})
    await service.start(job.job_id)
    return job.job_id


async def test_progress_is_told_once_stored_in_order_and_in_few_chains() -> None:
    store = GatedStore()
    service = JobService(store)
    told: list[int] = []
    service.add_listener(lambda job, event: told.append(event.sequence))
    job_id = await started(service)
    store.gate.clear()
    for step in range(1, 11):
        event = await service.progress(job_id, step * 10, f"step {step}")
        assert event is not None
        assert event.sequence == step + 2, "each report is decided at once, in sequence"
    assert told == [1, 2], "nothing is told before it is stored"
    store.gate.set()
    await service.settle(job_id)
    assert told == list(range(1, 13)), "then each event once, in order"
    assert [event.sequence for event in await store.events_after(job_id)] == list(range(1, 13))
    assert len(store.chains) <= 3, (
        f"the reports made while one chain was stored went in the next: {store.chains}"
    )
    await service.complete(job_id, "herald://done")
    assert told[-1] == 13


async def test_a_report_waits_once_as_many_as_may_wait_have_gathered() -> None:
    store = GatedStore()
    service = JobService(store)
    job_id = await started(service)
    store.gate.clear()
    for step in range(MAX_WRITTEN_BEHIND + 1):  # one in the writer's hands, the rest gathered
        await service.progress(job_id, step / 100, "step")
    waiting = asyncio.ensure_future(service.progress(job_id, 99, "one too many"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done(), "the report waits for the store"
    store.gate.set()
    assert await waiting is not None
    await service.settle(job_id)
    assert len(await store.events_after(job_id)) == MAX_WRITTEN_BEHIND + 4


async def test_a_refused_chain_is_raised_by_the_job_s_next_change_and_nothing_of_it_is_stored() -> None:
    store = GatedStore()
    service = JobService(store)
    job_id = await started(service)
    await service.progress(job_id, 10, "stored")
    await service.settle(job_id)
    store.refuse = True
    await service.progress(job_id, 20, "refused")
    with pytest.raises(StoreError, match="disk full"):
        await service.settle(job_id)
    store.refuse = False
    await service.progress(job_id, 30, "after")
    await service.settle(job_id)
    stored = await store.events_after(job_id)
    assert [(event.kind, event.payload.get("stage")) for event in stored][2:] == [
        ("progress", "stored"),
        ("progress", "after"),
    ], "the refused event is not stored, and the sequence has no gap"
    assert [event.sequence for event in stored] == [1, 2, 3, 4]


async def test_a_cancel_written_by_another_process_refuses_the_chain_and_is_told(tmp_path: Path) -> None:
    """Two services on one file, as two processes: the worker's chain lands on a cancelled job."""
    worker = JobService(SqliteJobStore(tmp_path / "jobs.db"))
    replica = JobService(SqliteJobStore(tmp_path / "jobs.db"))
    told: list[str] = []
    worker.add_listener(lambda job, event: told.append(event.kind))
    try:
        job_id = await started(worker)
        await worker.progress(job_id, 10, "first")
        await worker.settle(job_id)
        await replica.cancel(job_id, "stop")
        await worker.progress(job_id, 20, "decided on the state before the cancel")
        await worker.settle(job_id)  # the chain was refused: another writer, so nothing to raise
        assert told == ["created", "started", "progress", "cancelled"], "the cancel is told here too"
        with pytest.raises(IllegalTransition, match="cancelled"):  # as when the report waited for its write
            await worker.progress(job_id, 30, "after")
        kinds = [event.kind for event in await worker.reader.events_after(job_id)]
        assert kinds == ["created", "started", "progress", "cancelled"]
    finally:
        await worker.aclose()
        await replica.aclose()


@pytest.mark.parametrize("function_says", ["nothing", "it failed"])
async def test_a_run_whose_job_another_worker_claimed_stops_and_records_nothing(
    tmp_path: Path, function_says: str
) -> None:
    """A worker whose lease lapsed while it lived finds its job claimed at its next write,
    even when the function makes a failure of its own of that refusal."""
    alive = JobService(SqliteJobStore(tmp_path / "jobs.db"))
    other = JobService(SqliteJobStore(tmp_path / "jobs.db"))
    runner = JobRunner(alive)
    claimed = asyncio.Event()
    reports: list[float] = []

    async def work(ctx: JobContext) -> dict[str, Any]:
        for step in range(1, 3 * MAX_WRITTEN_BEHIND):
            if step == 3:
                await ctx.saved()
                claimed_by_other = await other.claim(await other.get(ctx.job_id))
                assert claimed_by_other is not None, "the other worker took the job over"
                claimed.set()
            try:
                await ctx.report_progress(step / 100, "working")
            except JobTakenOver:
                if function_says == "it failed":
                    raise JobFailure("oops", "the function gave up") from None
                raise
            reports.append(step / 100)
        return {"done": True}

    try:
        job = await alive.create("work", {})
        runner.launch(job, work, {}, "ctx", lambda level, data: None)
        async with asyncio.timeout(10):
            await runner.wait_ended(job.job_id)
        assert claimed.is_set()
        # Written behind, the refusal is known a round trip later: at most as many as may wait.
        assert len(reports) <= MAX_WRITTEN_BEHIND + 3, "the run stopped soon after the claim"
        stored = await other.get(job.job_id)
        assert stored.status == "running", "nothing was recorded as its ending"
        assert stored.worker == other.worker_id, "the job is the other worker's"
        kinds = [
            (event.kind, event.payload.get("stage")) for event in await other.reader.events_after(job.job_id)
        ]
        assert kinds[-1] == ("progress", RESUMED), "no write of the stopped run after the claim"
        with pytest.raises(JobTakenOver):
            await alive.complete(job.job_id, "herald://late")
    finally:
        await runner.aclose()
        await alive.aclose()
        await other.aclose()
