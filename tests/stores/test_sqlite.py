"""What only the SQLite store has to prove: its file layout, its upgrades and its write cost."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import orjson
import pytest

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord, epoch_seconds
from herald.jobs.service import JobService
from herald.stores import StoreError
from herald.stores.sqlite import JOB_SCHEMA_VERSION, SqliteJobStore

NOW = "2026-01-01T00:00:00.000Z"

#: The job tables as herald wrote them before arguments and status were split (layout 1).
LAYOUT_1 = """
CREATE TABLE jobs (job_id TEXT PRIMARY KEY, status TEXT NOT NULL, record BLOB NOT NULL);
CREATE INDEX jobs_by_status ON jobs (status);
CREATE TABLE job_events (
    job_id TEXT NOT NULL, sequence INTEGER NOT NULL, event BLOB NOT NULL, PRIMARY KEY (job_id, sequence)
) WITHOUT ROWID;
CREATE TABLE job_results (
    job_id TEXT NOT NULL, name TEXT NOT NULL, mime_type TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
"""


def write_layout_1(path: Path, *jobs: JobRecord) -> None:
    with sqlite3.connect(path) as db:
        db.executescript(LAYOUT_1)
        for job in jobs:
            db.execute(
                "INSERT INTO jobs VALUES (?, ?, ?)", (job.job_id, job.status, orjson.dumps(job.to_json()))
            )
            event = JobEvent(job.job_id, 1, "created", NOW, {"tool": job.tool, "status": "pending"})
            db.execute(
                "INSERT INTO job_events VALUES (?, ?, ?)",
                (job.job_id, 1, orjson.dumps(event.to_params())),
            )
    db.close()


async def test_a_file_of_the_old_layout_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    running = JobRecord("j1", "bulk", NOW, NOW, status="running", percentage=30.0, stage="match")
    running.arguments, running.owner, running.progress_token, running.sequence = {"csv": "a,b"}, "s1", 4, 3
    done = JobRecord("j2", "bulk", NOW, NOW, status="failed", sequence=2, error={"code": "x", "message": "y"})
    write_layout_1(path, running, done)
    store = SqliteJobStore(path)
    try:
        assert await store.get("j1") == running
        assert await store.get("j2") == done
        assert [job.job_id for job in await store.unfinished()] == ["j1"], "recovery still finds it"
        assert [event.kind for event in await store.events_after("j1")] == ["created"]
        assert await store.job_ids() == ["j1", "j2"], "the order of creation is kept"
        running.status, running.sequence = "completed", 4
        await store.record(running, JobEvent("j1", 4, "completed", NOW, {"status": "completed"}))
        assert await store.get("j1") == running
    finally:
        await store.aclose()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (JOB_SCHEMA_VERSION,)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    assert "jobs_v1" not in tables


#: Layout 2: arguments and status apart, but no workers yet.
LAYOUT_2 = """
CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY, tool TEXT NOT NULL, created_at TEXT NOT NULL, owner TEXT,
    progress_token BLOB, arguments BLOB NOT NULL
);
CREATE TABLE job_status (
    job_id TEXT PRIMARY KEY, status TEXT NOT NULL, percentage REAL NOT NULL, stage TEXT,
    eta_seconds REAL, sequence INTEGER NOT NULL, result_uri TEXT, summary TEXT, error BLOB,
    updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE job_events (
    job_id TEXT NOT NULL, sequence INTEGER NOT NULL, event BLOB NOT NULL, PRIMARY KEY (job_id, sequence)
) WITHOUT ROWID;
CREATE TABLE job_results (
    job_id TEXT NOT NULL, name TEXT NOT NULL, mime_type TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
INSERT INTO jobs VALUES ('j1', 'bulk', '2026-01-01T00:00:00.000Z', 's1', '4', '{"csv":"a,b"}');
INSERT INTO job_status VALUES ('j1', 'running', 30.0, 'match', NULL, 2, NULL, NULL, NULL,
                               '2026-01-01T00:00:00.000Z');
PRAGMA user_version = 2;
"""


async def test_a_file_without_workers_is_upgraded_and_its_running_jobs_are_orphans(tmp_path: Path) -> None:
    path = tmp_path / "layout2.db"
    with sqlite3.connect(path) as db:
        db.executescript(LAYOUT_2)
    db.close()
    store = SqliteJobStore(path)
    try:
        job = await store.get("j1")
        assert job is not None
        assert (job.status, job.worker, job.arguments) == ("running", None, {"csv": "a,b"})
        assert [found.job_id for found in await store.orphaned()] == ["j1"], "no worker holds it"
        await store.renew_lease("w1", 60.0)
        job.status, job.sequence, job.worker = "failed", 3, "w1"
        await store.record(job, JobEvent("j1", 3, "failed", NOW, {"status": "failed"}))
        assert await store.get("j1") == job
    finally:
        await store.aclose()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (JOB_SCHEMA_VERSION,)
        assert db.execute("SELECT count(*) FROM workers").fetchone() == (1,)
    db.close()


async def test_a_file_of_a_newer_layout_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    await SqliteJobStore(path).aclose()  # the current layout
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {JOB_SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer herald"):
        SqliteJobStore(path)


async def test_a_jobs_table_herald_did_not_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, title TEXT)")
    db.close()
    with pytest.raises(StoreError, match="did not write"):
        SqliteJobStore(path)


def wal_size(database: Path) -> int:
    wal = database.with_name(database.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def bytes_per_event(tmp_path: Path, argument_bytes: int, events: int = 40) -> float:
    """How much the WAL grows per progress event of a job given `argument_bytes` of CSV.

    The WAL is where every commit's pages go first; the file is fresh and too small to
    reach the automatic checkpoint, so its growth is exactly what the events wrote.
    """
    path = tmp_path / f"args-{argument_bytes}.db"
    store = SqliteJobStore(path)
    try:
        job = JobRecord("j1", "bulk", NOW, NOW, sequence=1, arguments={"csv": "x" * argument_bytes})
        await store.create(job, JobEvent("j1", 1, "created", NOW, {"tool": "bulk", "status": "pending"}))
        job.status = "running"
        before = wal_size(path)
        for step in range(1, events + 1):
            job.sequence, job.percentage, job.stage = step + 1, step * 2.0, f"row {step}"
            payload = {"percentage": job.percentage, "stage": job.stage}
            await store.record(job, JobEvent("j1", job.sequence, "progress", NOW, payload))
        assert (await store.get("j1")) == job
        return (wal_size(path) - before) / events
    finally:
        await store.aclose()


async def test_an_event_writes_the_same_whatever_the_arguments_weigh(tmp_path: Path) -> None:
    small = await bytes_per_event(tmp_path, 1_000)
    large = await bytes_per_event(tmp_path, 1_000_000)
    assert small > 0, "the measurement sees the events' writes"
    # A page or two of slack for B-tree bookkeeping; rewriting the arguments would add 1 MB.
    assert large <= small + 8192, (small, large)
    assert large < 1_000_000 / 20, f"{large:.0f} bytes per event for a 1 MB argument"


async def test_under_steady_load_pruning_keeps_the_file_from_growing(tmp_path: Path) -> None:
    """Jobs keep coming and ending; what retention forgets frees pages the next jobs reuse."""
    path = tmp_path / "steady.db"
    store = SqliteJobStore(path)
    arguments = {"csv": "x" * 100_000}
    sizes: list[int] = []
    try:
        for batch in range(6):
            for n in range(40):
                job = JobRecord(f"j{batch}-{n}", "bulk", NOW, NOW, sequence=1, arguments=arguments)
                await store.create(job, JobEvent(job.job_id, 1, "created", NOW, {"tool": "bulk"}))
                job.status, job.sequence = "completed", 2
                await store.record(job, JobEvent(job.job_id, 2, "completed", NOW, {"status": "completed"}))
                await store.put_result(job.job_id, "result.json", "application/json", b"r" * 50_000)
            assert len(await store.prune(epoch_seconds(NOW) + 1, retention=0.0)) == 40
            wal = path.with_name(path.name + "-wal")
            sizes.append(path.stat().st_size + (wal.stat().st_size if wal.exists() else 0))
    finally:
        await store.aclose()
    # 240 jobs of 150 KB each would need 36 MB; the file (with its write-ahead log) stays
    # at about two batches' worth.
    assert sizes[-1] <= sizes[0] * 1.25, sizes
    assert sizes[-1] < 16 * 1024 * 1024, sizes


async def test_a_file_with_workers_but_no_retention_is_upgraded(tmp_path: Path) -> None:
    """Layout 3 (workers, checkpoints) to 4 (retention): its jobs keep their worker."""
    path = tmp_path / "layout3.db"
    with sqlite3.connect(path) as db:
        db.executescript(LAYOUT_2.replace("PRAGMA user_version = 2;", ""))
        db.executescript(
            """
            ALTER TABLE job_status ADD COLUMN worker TEXT;
            UPDATE job_status SET worker = 'w1';
            CREATE TABLE workers (worker TEXT PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;
            CREATE TABLE job_checkpoints (job_id TEXT PRIMARY KEY, state BLOB NOT NULL) WITHOUT ROWID;
            INSERT INTO job_checkpoints VALUES ('j1', CAST('{"done":5}' AS BLOB));
            PRAGMA user_version = 3;
            """
        )
    db.close()
    store = SqliteJobStore(path)
    try:
        job = await store.get("j1")
        assert job is not None
        assert (job.worker, job.retain_seconds) == ("w1", None)
        assert await store.load_checkpoint("j1") == b'{"done":5}'
        assert not await store.expired("j1")
    finally:
        await store.aclose()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (JOB_SCHEMA_VERSION,)
    db.close()


async def test_a_process_hears_every_event_another_writes_to_the_file_even_all_at_once(
    tmp_path: Path,
) -> None:
    """A job this process queued, started and completed by another between two looks, is told whole."""
    path = tmp_path / "shared.db"
    following, writing = SqliteJobStore(path), SqliteJobStore(path)
    listener = JobService(following)
    told: list[tuple[str, int]] = []
    all_told = asyncio.Event()

    def tell(_: object, event: JobEvent) -> None:
        told.append((event.kind, event.sequence))
        if event.kind == "completed":
            all_told.set()

    listener.add_listener(tell)
    writer = JobService(writing)
    try:
        async with asyncio.TaskGroup() as tasks:
            follower = tasks.create_task(following.follow_writers(listener.hear))
            await asyncio.sleep(0)  # the follower takes note of when it began
            job = await listener.create("instant", {}, queued=True)
            await writer.start(job.job_id)
            await writer.complete(job.job_id, "herald://jobs/x/result.json")
            async with asyncio.timeout(10):
                await all_told.wait()
            follower.cancel()
    finally:
        await following.aclose()
        await writing.aclose()
    assert told == [("created", 1), ("started", 2), ("completed", 3)]
