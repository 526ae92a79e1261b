"""One conformance suite for every store implementation.

Public API (also exported by `herald.testing`) so any backend, ours or a user's, proves
itself the same way: `await check_event_log(make_log)`, `await check_job_store(make_store)`
and `await check_session_store(make_store, expiry_wait=...)` with a factory for a fresh,
empty store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord, epoch_seconds
from herald.jobs.store import JobChanged, JobQueue, JobStore
from herald.stores.errors import JobMissing, StoreError
from herald.stores.eventlog import EventLog, JobEventReference, StoredEvent
from herald.stores.sessions import SessionRecord, SessionStore

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
        await _check_job_event_references(log)
        await log.forget("s")
        assert await log.read_after("s", "a", 0) == [], "forget drops the session's streams"
        assert await log.read_after("s", "b", 0) == []
        assert await log.position_of_job_event("s", "g", "j1", 1) is None, "forget drops job events too"
        assert len(await log.read_after("t", "a", 0)) == 1, "forget leaves other sessions alone"
    finally:
        await log.aclose()


async def _check_job_event_references(log: EventLog) -> None:
    """A job event is logged as a reference, placed among the stream's bytes; its id finds it."""
    assert await log.append_job_event("s", "g", "j1", 1) == 1, "a job event takes the next position"
    assert await log.append("s", "g", b"a log message") == 2, "bytes and job events share the numbering"
    assert await log.append_job_event("s", "g", "j1", 2) == 3
    assert await log.append_job_event("s", "g", "job.with:odd.id", 7) == 4
    assert await log.read_after("s", "g", 0) == [
        StoredEvent(1, job_event=JobEventReference("j1", 1)),
        StoredEvent(2, b"a log message"),
        StoredEvent(3, job_event=JobEventReference("j1", 2)),
        StoredEvent(4, job_event=JobEventReference("job.with:odd.id", 7)),
    ], "a job event reads back as its reference, with no bytes"
    assert await log.read_after("s", "g", 2) == [
        StoredEvent(3, job_event=JobEventReference("j1", 2)),
        StoredEvent(4, job_event=JobEventReference("job.with:odd.id", 7)),
    ]
    assert await log.position_of_job_event("s", "g", "j1", 2) == 3, "a job event's id finds its position"
    assert await log.position_of_job_event("s", "g", "job.with:odd.id", 7) == 4
    assert await log.position_of_job_event("s", "g", "j1", 9) is None, "an event never logged is not found"
    assert await log.position_of_job_event("s", "a", "j1", 1) is None, "nor in another stream"
    assert await log.position_of_job_event("t", "g", "j1", 1) is None, "nor in another session"
    await log.forget_stream("s", "g")
    assert await log.position_of_job_event("s", "g", "j1", 1) is None, "forget_stream drops job events"
    assert await log.append_job_event("s", "g", "j1", 1) == 1, "a forgotten stream numbers from 1 again"


JobStoreFactory = Callable[[], Awaitable[JobStore]]


async def check_job_store(make_store: JobStoreFactory) -> None:
    """Raise AssertionError at the first property the job store breaks."""
    store = await make_store()
    try:
        assert await store.get("j1") is None, "a new store is empty"
        job = JobRecord("j1", "tool", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", sequence=1)
        job.arguments = {"rows": 3, "csv": "name\nAda\n"}
        job.owner, job.progress_token = "session-a", 7
        job.trace_context = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
        created = JobEvent("j1", 1, "created", job.created_at, {"tool": "tool", "status": "pending"})
        await store.create(job, created)
        found = await store.get("j1")
        assert found == job, "a job reads back as it was written"
        assert found is not None
        assert found.progress_token == 7, "an integer progress token stays an integer"
        assert [event.to_params() for event in await store.events_after("j1")] == [created.to_params()]
        assert [found.job_id for found in await store.unfinished()] == ["j1"]
        await _refused(store.create(job, created), "creating a job twice")
        job.status, job.sequence, job.updated_at = "running", 2, "2026-01-01T00:00:01.000Z"
        started = JobEvent("j1", 2, "started", job.updated_at, {"status": "running"})
        await store.record(job, started)
        job.percentage, job.stage, job.eta_seconds, job.sequence = 40.5, "match", 12.0, 3
        progressed = JobEvent("j1", 3, "progress", job.updated_at, {"percentage": 40.5, "stage": "match"})
        await store.record(job, progressed)
        assert await store.get("j1") == job, "the status reads back as it was recorded"
        assert [found.job_id for found in await store.unfinished()] == ["j1"], "a running job is unfinished"
        expected = JobRecord.from_json(job.to_json())
        job.arguments, job.tool, job.owner = {"rows": 999}, "other", "session-b"
        job.trace_context = None
        job.status, job.sequence, job.result_uri = "completed", 4, "herald://jobs/j1/result.json"
        job.percentage, job.summary = 100.0, "done"
        expected.status, expected.sequence, expected.result_uri = job.status, job.sequence, job.result_uri
        expected.percentage, expected.summary = job.percentage, job.summary
        completed = JobEvent(
            "j1", 4, "completed", job.updated_at, {"status": "completed", "resultResourceId": "x"}
        )
        await store.record(job, completed)
        assert await store.get("j1") == expected, "an event writes the status; what started the job stays"
        assert [event.kind for event in await store.events_after("j1", 1)] == [
            "started",
            "progress",
            "completed",
        ]
        assert await store.events_after("j1", 4) == []
        assert await store.unfinished() == [], "a completed job is finished"
        failing = JobRecord("j2", "tool", job.created_at, job.created_at, sequence=1, progress_token="7")
        await store.create(failing, JobEvent("j2", 1, "created", job.created_at, {"tool": "tool"}))
        failing.status, failing.sequence = "failed", 2
        failing.error = {"code": "interrupted", "message": "stopped", "hint": "start it again"}
        await store.record(failing, JobEvent("j2", 2, "failed", job.created_at, {"status": "failed"}))
        assert await store.get("j2") == failing, "an error and a string progress token read back"
        stray = JobRecord("nobody", "tool", job.created_at, job.created_at, sequence=2)
        try:
            await store.record(stray, JobEvent("nobody", 2, "started", job.created_at, {}))
        except JobMissing:
            pass
        else:
            raise AssertionError("recording an event of a job never created raises JobMissing")
        assert await store.get("nobody") is None
        await store.put_result("j1", "result.json", "application/json", b'{"ok":true}')
        assert await store.get_result("j1", "result.json") == ("application/json", b'{"ok":true}')
        assert await store.get_result("j1", "other") is None
        assert await store.events_after("nobody") == []
        assert await store.job_ids() == ["j1", "j2"], "oldest first"
        assert await store.job_ids(owner="session-a") == ["j1"]
        assert await store.job_ids(owner="someone else") == []
        await _check_writers(store)
        await _check_chains(store)
        await _check_retention(store)
    finally:
        await store.aclose()


async def _check_chains(store: JobStore) -> None:
    """Several changes of one job at once: written in order, whole, and only on the state expected."""
    now = "2026-01-01T00:00:00.000Z"
    job = JobRecord("chain", "tool", now, now, sequence=1)
    await store.create(job, JobEvent("chain", 1, "created", now, {"tool": "tool"}))
    chain = []
    for sequence, (status, percentage) in enumerate(
        (("running", 0.0), ("running", 10.0), ("running", 30.0)), 2
    ):
        job = JobRecord.from_json(job.to_json())
        job.status, job.percentage, job.sequence, job.stage = status, percentage, sequence, f"s{sequence}"
        kind = "started" if sequence == 2 else "progress"
        chain.append((job, JobEvent("chain", sequence, kind, now, {"percentage": percentage})))
    await store.record_chain(chain)
    assert await store.get("chain") == chain[-1][0], "the job is as the chain's last event left it"
    assert [event.sequence for event in await store.events_after("chain", 1)] == [2, 3, 4], (
        "every event, in order"
    )
    stale = JobRecord.from_json(job.to_json())
    stale.percentage, stale.sequence = 50.0, 4  # decided on the job at 3: another writer got to 4
    later = JobRecord.from_json(stale.to_json())
    later.percentage, later.sequence = 60.0, 5
    refused = [
        (stale, JobEvent("chain", 4, "progress", now, {})),
        (later, JobEvent("chain", 5, "progress", now, {})),
    ]
    try:
        await store.record_chain(refused)
    except JobChanged:
        pass
    else:
        raise AssertionError("a chain on a state that changed is refused with JobChanged")
    assert [event.sequence for event in await store.events_after("chain", 1)] == [2, 3, 4], (
        "and writes nothing"
    )
    assert await store.get("chain") == chain[-1][0]


async def _check_writers(store: JobStore) -> None:
    """Several processes on one store: writes are compare-and-set, and leases guard jobs."""
    now = "2026-01-01T00:00:00.000Z"
    job = JobRecord("w-job", "tool", now, now, sequence=1, worker="w1")
    await store.create(job, JobEvent("w-job", 1, "created", now, {"tool": "tool"}))
    found = await store.get("w-job")
    assert found is not None
    assert found.worker == "w1", "a job names its worker"
    assert [orphan.job_id for orphan in await store.orphaned()] == ["w-job"], "a worker without a lease"
    await store.renew_lease("w1", 60.0)
    assert await store.orphaned() == [], "a live worker's job is nobody's to recover"
    job.status, job.sequence = "running", 2
    await store.record(job, JobEvent("w-job", 2, "started", now, {"status": "running"}))
    stale = JobRecord.from_json(job.to_json())
    stale.status, stale.sequence = "cancelled", 2  # decided on the job as it was at 1
    try:
        await store.record(stale, JobEvent("w-job", 2, "cancelled", now, {"status": "cancelled"}))
    except JobChanged:
        pass
    else:
        raise AssertionError("a write decided on an old sequence raises JobChanged")
    after = await store.get("w-job")
    assert after is not None
    assert after.status == "running", "a refused write changes nothing"
    assert [event.kind for event in await store.events_after("w-job")] == ["created", "started"]
    await store.renew_lease("w1", -1.0)  # a lease that has run out
    assert [orphan.job_id for orphan in await store.orphaned()] == ["w-job"], "a lapsed lease"
    await store.renew_lease("w1", 60.0)
    await store.release_lease("w1")
    assert [orphan.job_id for orphan in await store.orphaned()] == ["w-job"], "a released lease"
    await store.renew_lease("w2", 60.0)
    job.status, job.sequence, job.worker = "failed", 3, "w1"
    await store.record(job, JobEvent("w-job", 3, "failed", now, {"status": "failed"}))
    assert await store.orphaned() == [], "an ended job is nobody's"
    assert await store.load_checkpoint("w-job") is None, "no checkpoint until one is saved"
    await store.save_checkpoint("w-job", b'{"row":10}')
    await store.save_checkpoint("w-job", b'{"row":20}')
    assert await store.load_checkpoint("w-job") == b'{"row":20}', "the latest checkpoint wins"


async def _refused(write: Awaitable[None], what: str) -> None:
    try:
        await write
    except StoreError:
        return
    raise AssertionError(f"{what} raises StoreError")


async def _check_retention(store: JobStore) -> None:
    """Ended jobs are forgotten past their retention, with all they left, and known as expired."""
    ended_at, later = "2026-02-01T00:00:00.000Z", "2026-02-01T00:01:40.000Z"  # 100 s apart
    start = epoch_seconds(ended_at)

    async def job(job_id: str, status: str, updated_at: str, retain: float | None = None) -> None:
        record = JobRecord(job_id, "tool", ended_at, ended_at, sequence=1, retain_seconds=retain)
        await store.create(record, JobEvent(job_id, 1, "created", ended_at, {"tool": "tool"}))
        record.status, record.sequence = "running", 2
        await store.record(record, JobEvent(job_id, 2, "started", ended_at, {"status": "running"}))
        if status != "running":
            record.status, record.sequence, record.updated_at = status, 3, updated_at
            await store.record(record, JobEvent(job_id, 3, status, updated_at, {"status": status}))

    await job("r-old", "completed", ended_at)
    await job("r-new", "failed", later)
    await job("r-run", "running", ended_at)
    await job("r-task", "cancelled", ended_at, retain=10.0)
    await job("r-keep", "completed", ended_at, retain=1000.0)
    await store.put_result("r-old", "result.json", "application/json", b"{}")
    await store.save_checkpoint("r-old", b"{}")
    gone = await store.prune(start + 50, retention=30.0)
    # (The jobs of the checks before, which ended in January, go too.)
    assert sorted(job_id for job_id in gone if job_id.startswith("r-")) == ["r-old", "r-task"], (
        "ended longer ago than their retention"
    )
    for job_id in ("r-old", "r-task"):
        assert await store.get(job_id) is None
        assert await store.expired(job_id), "a forgotten job is known to have expired"
        assert await store.events_after(job_id) == []
    assert await store.get_result("r-old", "result.json") is None
    assert await store.load_checkpoint("r-old") is None
    for job_id in ("r-new", "r-run", "r-keep"):
        assert await store.get(job_id) is not None, f"{job_id} is kept"
        assert not await store.expired(job_id)
    assert not await store.expired("never-was")
    assert await store.prune(start + 50, retention=30.0) == [], "pruning again forgets nothing more"


async def check_job_queue(make_store: JobStoreFactory, *, idle_seconds: float = 1.5) -> None:
    """Raise AssertionError at the first property a store's own job queue breaks.

    For a `JobStore` that is also a `JobQueue`. Idleness is the backend's own clock, so
    the check waits for real (1.75 x `idle_seconds` in all), and every idle time it
    compares is a quarter of `idle_seconds` away from the limit either way.
    """
    store = await make_store()
    assert isinstance(store, JobQueue), "the store keeps a queue"
    try:
        assert await store.read_queue("w1", ["a"], 10) == [], "a new queue is empty"
        assert await store.take_over_queued("w1", ["a"], idle_seconds, 10) == [], "nothing was handed out"
        for job_id, tool, worker in (
            ("q1", "a", None),
            ("q2", "a", None),
            ("q3", "b", None),
            ("mine", "a", "w0"),
        ):
            job = JobRecord(job_id, tool, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", sequence=1)
            job.worker = worker
            await store.create(job, JobEvent(job_id, 1, "created", job.created_at, {"status": "pending"}))
        first = await store.read_queue("w1", ["a"], 1)
        assert [entry.job_id for entry in first] == ["q1"], "queued jobs come out oldest first"
        second = await store.read_queue("w2", ["a"], 10)
        assert [entry.job_id for entry in second] == ["q2"], (
            "each entry goes to one worker, another tool's to none; a job with a worker is not queued"
        )
        assert await store.read_queue("w3", ["a"], 10) == []
        other = await store.read_queue("w3", ["b"], 10)
        assert [(entry.job_id, entry.tool) for entry in other] == [("q3", "b")], "each tool has its queue"
        await store.acknowledge_queued(other)
        await asyncio.sleep(idle_seconds / 2)
        await store.hold_queued("w1", first)
        await asyncio.sleep(idle_seconds * 3 / 4)  # w1's entry was held since; w2's was not
        taken = await store.take_over_queued("w3", ["a", "b"], idle_seconds, 10)
        assert [entry.job_id for entry in taken] == ["q2"], "only an entry nobody held goes to another worker"
        await store.acknowledge_queued(taken)
        await asyncio.sleep(idle_seconds / 2)  # w1 held its entry no more
        taken = await store.take_over_queued("w3", ["a", "b"], idle_seconds, 10)
        assert [entry.job_id for entry in taken] == ["q1"], "the entry a stopped worker held is taken over"
        await store.acknowledge_queued(taken)
        assert await store.take_over_queued("w1", ["a", "b"], 0, 10) == [], "acknowledged entries are gone"
        assert await store.read_queue("w1", ["a", "b"], 10) == []
        await _check_handing_back(store)
    finally:
        await store.aclose()


async def _check_handing_back(store: JobStore) -> None:
    """A running job its worker hands back (recorded with no worker, not ended) is queued again."""
    assert isinstance(store, JobQueue)
    now = "2026-01-01T00:00:00.000Z"
    job = JobRecord("back", "a", now, now, sequence=1, worker="w0")
    await store.create(job, JobEvent("back", 1, "created", now, {"status": "pending"}))
    job.status, job.sequence = "running", 2
    await store.record(job, JobEvent("back", 2, "started", now, {"status": "running"}))
    assert await store.read_queue("w1", ["a"], 10) == [], "a job its worker runs is nobody else's"
    job.sequence, job.worker, job.stage = 3, None, "waiting for a worker"
    await store.record(job, JobEvent("back", 3, "progress", now, {"percentage": 0, "stage": job.stage}))
    handed = await store.read_queue("w1", ["a"], 10)
    assert [entry.job_id for entry in handed] == ["back"], "a job handed back is queued again"
    await store.acknowledge_queued(handed)


SessionStoreFactory = Callable[[], Awaitable[SessionStore]]
#: Another replica's store on the same backend as the one given.
PeerFactory = Callable[[SessionStore], Awaitable[SessionStore]]
#: How long a message between replicas may take to arrive before the check calls it lost.
MESSAGE_WAIT_SECONDS = 10.0


async def check_session_store(
    make_store: SessionStoreFactory,
    *,
    expiry_wait: Callable[[], Awaitable[None]],
    make_peer: PeerFactory | None = None,
) -> None:
    """Raise AssertionError at the first property the session store breaks.

    `expiry_wait` lets more than 0.2 s pass for the store (the sessions saved with a
    0.2 s life must then be gone): a real sleep for a real backend, a clock step for one
    with an injectable clock. `make_peer` opens a second store on the same backend, as
    another replica would (by default the same store stands for both).
    """
    store = await make_store()
    try:
        peer = await make_peer(store) if make_peer is not None else store
        try:
            await _check_replica_channel(store, peer)
        finally:
            if peer is not store:
                await peer.aclose()
        assert await store.load("nobody", 60) is None, "a new store holds no session"
        record = SessionRecord(
            "s1",
            "2025-06-18",
            owner="o1",
            client_capabilities={"sampling": {}},
            client_info={"name": "client", "version": "1"},
        )
        await store.save(record, 60)
        assert await store.load("s1", None) == record, "a saved session loads as it was saved"
        record.log_level, record.subscriptions, record.operating = "debug", ["gift://catalog"], True
        await store.save(record, 60)
        loaded = await store.load("s1", 60)
        assert loaded == record, "saving again replaces the session"
        assert await store.load("s2", 60) is None, "another id finds nothing"
        await store.save(SessionRecord("short", "2025-11-25", owner="o2"), 0.2)
        await store.save(SessionRecord("kept", "2025-11-25", owner="o3"), 0.2)
        assert await store.load("kept", 60) is not None, "loading with a ttl extends the session's life"
        await expiry_wait()
        assert await store.load("short", None) is None, "an unused session expires after its ttl"
        assert await store.load("kept", None) is not None, "an extended one does not"
        assert await store.delete("s1") is True, "delete ends a live session"
        assert await store.load("s1", 60) is None, "a deleted session is gone"
        assert await store.delete("s1") is False, "deleting it again finds nothing"
        assert await store.delete("short") is False, "nor does deleting an expired one"
    finally:
        await store.aclose()


async def _check_replica_channel(store: SessionStore, peer: SessionStore) -> None:
    key = await store.shared_key()
    assert len(key) == 32, "the shared key is 32 bytes"
    assert await peer.shared_key() == key, "every replica gets the same key"
    assert await store.shared_key() == key, "and it never changes"
    followers = {"store": _Follower(), "peer": _Follower()}
    async with asyncio.timeout(MESSAGE_WAIT_SECONDS), asyncio.TaskGroup() as group:
        tasks = [group.create_task(store.follow(followers["store"].hear))]
        tasks.append(group.create_task(peer.follow(followers["peer"].hear)))
        # A follower hears what is published once it follows; until both do, a probe may be lost.
        while not all(each.first.is_set() for each in followers.values()):
            await peer.publish(b"probe")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    for each in followers.values():
                        await each.first.wait()
        await store.publish(b"one")
        await store.publish(b"two")
        for each in followers.values():
            await each.last.wait()
        for task in tasks:
            task.cancel()
    for name, follower in followers.items():
        assert follower.messages[-2:] == [b"one", b"two"], f"the {name} hears every message, in order"
        assert set(follower.messages[:-2]) == {b"probe"}, f"the {name} hears nothing but what was published"


class _Follower:
    def __init__(self) -> None:
        self.messages: list[bytes] = []
        self.first = asyncio.Event()
        self.last = asyncio.Event()

    async def hear(self, message: bytes) -> None:
        self.messages.append(message)
        self.first.set()
        if message == b"two":
            self.last.set()
