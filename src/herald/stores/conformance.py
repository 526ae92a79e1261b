"""One conformance suite for every store implementation.

Public API (also exported by `herald.testing`) so any backend, ours or a user's, proves
itself the same way: `await check_event_log(make_log)` and `await check_job_store(make_store)`
with a factory for a fresh, empty store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.stores.eventlog import EventLog
from herald.stores.jobstore import JobStore

EventLogFactory = Callable[[], Awaitable[EventLog]]


async def check_event_log(make_log: EventLogFactory) -> None:
    """Raise AssertionError at the first property the log breaks."""
    log = await make_log()
    try:
        assert await log.read_after("s", "a", 0) == [], "a new log is empty"
        positions = [await log.append("s", "a", f"event {n}".encode()) for n in range(1, 6)]
        assert positions == [1, 2, 3, 4, 5], "positions count from 1 per stream"
        assert await log.append("s", "b", b"other stream") == 1, "streams are numbered apart"
        assert await log.append("t", "a", b"other session") == 1, "sessions are numbered apart"
        after = await log.read_after("s", "a", 2)
        assert [(event.position, event.data) for event in after] == [
            (3, b"event 3"),
            (4, b"event 4"),
            (5, b"event 5"),
        ], "read_after returns exactly what followed, oldest first"
        assert await log.read_after("s", "a", 5) == [], "nothing follows the last event"
        assert [event.data for event in await log.read_after("t", "a", 0)] == [b"other session"]
        assert await log.read_after("nobody", "a", 0) == [], "another session's id finds nothing"
        binary = bytes(range(256))
        position = await log.append("s", "bin", binary)
        assert (await log.read_after("s", "bin", position - 1))[0].data == binary, "bytes survive as they are"
        await log.forget_stream("s", "bin")
        assert await log.read_after("s", "bin", 0) == [], "forget_stream drops that stream"
        assert len(await log.read_after("s", "a", 0)) == 5, "forget_stream leaves the other streams"
        await log.forget("s")
        assert await log.read_after("s", "a", 0) == [], "forget drops the session's streams"
        assert await log.read_after("s", "b", 0) == []
        assert len(await log.read_after("t", "a", 0)) == 1, "forget leaves other sessions alone"
    finally:
        await log.aclose()


JobStoreFactory = Callable[[], Awaitable[JobStore]]


async def check_job_store(make_store: JobStoreFactory) -> None:
    """Raise AssertionError at the first property the job store breaks."""
    store = await make_store()
    try:
        assert await store.get("j1") is None, "a new store is empty"
        job = JobRecord("j1", "tool", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", sequence=1)
        job.arguments = {"rows": 3}
        created = JobEvent("j1", 1, "created", job.created_at, {"tool": "tool", "status": "pending"})
        await store.record(job, created)
        found = await store.get("j1")
        assert found == job, "a job reads back as it was written"
        assert [event.to_params() for event in await store.events_after("j1")] == [created.to_params()]
        assert [found.job_id for found in await store.unfinished()] == ["j1"]
        job.status, job.sequence = "running", 2
        started = JobEvent("j1", 2, "started", job.updated_at, {"status": "running"})
        await store.record(job, started)
        job.status, job.sequence, job.result_uri = "completed", 3, "herald://jobs/j1/result.json"
        completed = JobEvent(
            "j1", 3, "completed", job.updated_at, {"status": "completed", "resultResourceId": "x"}
        )
        await store.record(job, completed)
        assert (await store.get("j1")) == job, "the last record wins"
        assert [event.kind for event in await store.events_after("j1", 1)] == ["started", "completed"]
        assert await store.events_after("j1", 3) == []
        assert await store.unfinished() == [], "a completed job is finished"
        await store.put_result("j1", "result.json", "application/json", b'{"ok":true}')
        assert await store.get_result("j1", "result.json") == ("application/json", b'{"ok":true}')
        assert await store.get_result("j1", "other") is None
        assert await store.events_after("nobody") == []
        assert await store.job_ids() == ["j1"]
        assert await store.job_ids(owner="someone else") == []
    finally:
        await store.aclose()
