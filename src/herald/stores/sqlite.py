"""Stores in one SQLite file: the embedded default, durable across restarts.

The file runs in WAL mode with `synchronous=NORMAL`: a committed event survives a
crash of the process (the OS still holds it), and readers never block the writer.
Statements are short and run on the event loop's thread; SQLite answers them in
microseconds, which is cheaper than a thread hop.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.stores.eventlog import StoredEvent

JOB_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    record BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status);
CREATE TABLE IF NOT EXISTS job_events (
    job_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    event BLOB NOT NULL,
    PRIMARY KEY (job_id, sequence)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS job_results (
    job_id TEXT NOT NULL,
    name TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS stream_events (
    session TEXT NOT NULL,
    stream TEXT NOT NULL,
    position INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (session, stream, position)
) WITHOUT ROWID;
"""


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at its start so two writers never both read stale state."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def connect(path: str | Path) -> sqlite3.Connection:
    """Open (and create) a store file with the settings every herald store relies on."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA busy_timeout=5000")
    return connection


class SqliteEventLog:
    """An `EventLog` in a SQLite file; each append is committed before it returns."""

    def __init__(self, path: str | Path) -> None:
        self._db = connect(path)
        self._db.executescript(SCHEMA)

    async def append(self, session: str, stream: str, data: bytes) -> int:
        with transaction(self._db) as db:  # read the last position and write the next, atomically
            row = db.execute(
                "SELECT COALESCE(MAX(position), 0) FROM stream_events WHERE session = ? AND stream = ?",
                (session, stream),
            ).fetchone()
            position = int(row[0]) + 1
            db.execute(
                "INSERT INTO stream_events (session, stream, position, data) VALUES (?, ?, ?, ?)",
                (session, stream, position, data),
            )
        return position

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        rows = self._db.execute(
            "SELECT position, data FROM stream_events WHERE session = ? AND stream = ? AND position > ?"
            " ORDER BY position",
            (session, stream, position),
        ).fetchall()
        return [StoredEvent(int(found), bytes(data)) for found, data in rows]

    async def forget(self, session: str) -> None:
        with transaction(self._db) as db:
            db.execute("DELETE FROM stream_events WHERE session = ?", (session,))

    async def forget_stream(self, session: str, stream: str) -> None:
        with transaction(self._db) as db:
            db.execute("DELETE FROM stream_events WHERE session = ? AND stream = ?", (session, stream))

    async def aclose(self) -> None:
        self._db.close()


class SqliteJobStore:
    """A `JobStore` in a SQLite file; a job's state and its event commit together."""

    def __init__(self, path: str | Path) -> None:
        self._db = connect(path)
        self._db.executescript(JOB_SCHEMA)

    async def record(self, job: JobRecord, event: JobEvent) -> None:
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO jobs (job_id, status, record) VALUES (?, ?, ?)"
                " ON CONFLICT (job_id) DO UPDATE SET status = excluded.status, record = excluded.record",
                (job.job_id, job.status, orjson.dumps(job.to_json())),
            )
            db.execute(
                "INSERT INTO job_events (job_id, sequence, event) VALUES (?, ?, ?)",
                (event.job_id, event.sequence, orjson.dumps(event.to_params())),
            )

    async def get(self, job_id: str) -> JobRecord | None:
        row = self._db.execute("SELECT record FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return JobRecord.from_json(orjson.loads(row[0])) if row else None

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        rows = self._db.execute(
            "SELECT event FROM job_events WHERE job_id = ? AND sequence > ? ORDER BY sequence",
            (job_id, sequence),
        ).fetchall()
        return [JobEvent.from_params(orjson.loads(row[0])) for row in rows]

    async def unfinished(self) -> list[JobRecord]:
        rows = self._db.execute("SELECT record FROM jobs WHERE status IN ('pending', 'running')").fetchall()
        return [JobRecord.from_json(orjson.loads(row[0])) for row in rows]

    async def job_ids(self, owner: str | None = None) -> list[str]:
        rows = self._db.execute("SELECT record FROM jobs ORDER BY rowid").fetchall()
        jobs = [JobRecord.from_json(orjson.loads(row[0])) for row in rows]
        return [job.job_id for job in jobs if owner is None or job.owner == owner]

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        with transaction(self._db) as db:
            db.execute(
                "INSERT OR REPLACE INTO job_results (job_id, name, mime_type, data) VALUES (?, ?, ?, ?)",
                (job_id, name, mime_type, data),
            )

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        row = self._db.execute(
            "SELECT mime_type, data FROM job_results WHERE job_id = ? AND name = ?", (job_id, name)
        ).fetchone()
        return (str(row[0]), bytes(row[1])) if row else None

    async def aclose(self) -> None:
        self._db.close()
