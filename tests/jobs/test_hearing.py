"""What one process hears of another's writes to a shared store: told in order, each event
with a record at least as new as it (`JobService.hear`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.jobs.service import JobService
from herald.stores.memory import MemoryJobStore


class RacedStore(MemoryJobStore):
    """A memory store two services share, where another write lands as events are read."""

    def __init__(self) -> None:
        super().__init__()
        self.as_events_are_read: Callable[[], Awaitable[None]] | None = None

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        if self.as_events_are_read is not None:
            write, self.as_events_are_read = self.as_events_are_read, None
            await write()
        return await super().events_after(job_id, sequence)


async def test_an_ending_written_while_hearing_is_told_with_an_ended_job() -> None:
    store = RacedStore()
    writer, listener = JobService(store), JobService(store)
    told: list[tuple[JobRecord, JobEvent]] = []
    listener.add_listener(lambda job, event: told.append((job, event)))

    job = await writer.create("count", {})
    await writer.start(job.job_id)
    await writer.progress(job.job_id, 50, "half")
    await writer.settle(job.job_id)

    async def complete() -> None:
        await writer.complete(job.job_id, "herald://jobs/x/result.json")

    store.as_events_are_read = complete  # the ending lands between the listener's two reads
    await listener.hear(job.job_id, 3, since=0)

    assert [event.kind for _, event in told][:3] == ["created", "started", "progress"]
    assert all(record.sequence >= event.sequence for record, event in told), [
        (record.sequence, event.sequence) for record, event in told
    ]
    endings = [(record, event) for record, event in told if event.kind == "completed"]
    assert all(record.terminal for record, _ in endings), "an ending is told with an ended job"
    await listener.hear(job.job_id, 4)
    assert [event.kind for _, event in told] == ["created", "started", "progress", "completed"]
    assert told[-1][0].terminal
