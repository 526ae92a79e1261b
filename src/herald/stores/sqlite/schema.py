"""The tables of a store file, their layouts, and bringing a file of an earlier layout up to date.

Jobs are kept in two tables because their parts change at different rates: `jobs` holds
what started a job (its arguments may be megabytes) and is written once; `job_status`
holds the few small fields an event changes. An event is one row appended to
`job_events` plus an update of the job's `job_status` row, whatever the arguments weigh.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import orjson

from herald.jobs.record import JobRecord
from herald.stores.errors import StoreError
from herald.stores.sqlite.connection import transaction

#: Handshake-era sessions, for replicas on one machine that share the file.
SESSION_TABLE: Final = """CREATE TABLE IF NOT EXISTS http_sessions (
    session_id TEXT PRIMARY KEY,
    record BLOB NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID"""

#: What replicas sharing the file share besides sessions: the key that seals `requestState`
#: (made once), and the messages they send each other, read by polling and kept a minute.
REPLICA_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS replica_keys (
        name TEXT PRIMARY KEY,
        value BLOB NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS replica_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        sent_at REAL NOT NULL,
        body BLOB NOT NULL
    )""",
)

#: What `follow_writers` reads: the jobs changed since a moment.
CHANGES_INDEX: Final = "CREATE INDEX IF NOT EXISTS job_status_by_update ON job_status (updated_at)"

#: The layout of the job tables this code reads and writes, kept in `PRAGMA user_version`.
#: Version 1 (never written to the pragma, which read 0) kept each job as one JSON record;
#: version 2 had no workers (no `job_status.worker`, no `workers` or `job_checkpoints`);
#: version 3 had no retention (no `jobs.retain_seconds`, no `expired_jobs`); version 4 had
#: no index of recent changes (`job_status_by_update`, which processes follow each other by);
#: version 5 kept no trace context (`jobs.trace_context`).
JOB_SCHEMA_VERSION: Final = 6

#: Each worker's lease: it holds its jobs until `expires_at` (seconds since the epoch: the
#: processes sharing a file share the machine's clock).
WORKERS_TABLE: Final = """CREATE TABLE IF NOT EXISTS workers (
    worker TEXT PRIMARY KEY,
    expires_at REAL NOT NULL
) WITHOUT ROWID"""

#: The latest checkpoint of each resumable job (what a worker taking it over resumes from).
CHECKPOINTS_TABLE: Final = """CREATE TABLE IF NOT EXISTS job_checkpoints (
    job_id TEXT PRIMARY KEY,
    state BLOB NOT NULL
) WITHOUT ROWID"""

#: The ids of jobs retention forgot, so that asking for one says it expired.
EXPIRED_TABLE: Final = """CREATE TABLE IF NOT EXISTS expired_jobs (
    job_id TEXT PRIMARY KEY
) WITHOUT ROWID"""

#: Layout N to N + 1, for the layouts that only add to the one before.
UPGRADES: Final = {
    # Jobs get a worker (the unfinished ones have none: they are orphans) and checkpoints.
    2: ("ALTER TABLE job_status ADD COLUMN worker TEXT", WORKERS_TABLE, CHECKPOINTS_TABLE),
    # Jobs get a retention, and forgotten ones leave their id.
    3: ("ALTER TABLE jobs ADD COLUMN retain_seconds REAL", EXPIRED_TABLE),
    # Processes sharing the file follow each other's writes by time of change.
    4: (CHANGES_INDEX,),
    # Jobs keep the trace context of the call that started them.
    5: ("ALTER TABLE jobs ADD COLUMN trace_context BLOB",),
}

JOB_SCHEMA: Final = (
    """CREATE TABLE jobs (
        job_id TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        created_at TEXT NOT NULL,
        owner TEXT,
        progress_token BLOB,
        arguments BLOB NOT NULL,
        retain_seconds REAL,
        trace_context BLOB
    )""",
    "CREATE INDEX jobs_by_owner ON jobs (owner)",
    """CREATE TABLE job_status (
        job_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        percentage REAL NOT NULL,
        stage TEXT,
        eta_seconds REAL,
        sequence INTEGER NOT NULL,
        result_uri TEXT,
        summary TEXT,
        error BLOB,
        updated_at TEXT NOT NULL,
        worker TEXT
    ) WITHOUT ROWID""",
    "CREATE INDEX job_status_by_status ON job_status (status)",
    CHANGES_INDEX,
    WORKERS_TABLE,
    CHECKPOINTS_TABLE,
    EXPIRED_TABLE,
    """CREATE TABLE IF NOT EXISTS job_events (
        job_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        event BLOB NOT NULL,
        PRIMARY KEY (job_id, sequence)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS job_results (
        job_id TEXT NOT NULL,
        name TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (job_id, name)
    ) WITHOUT ROWID""",
)

#: The event log's table. A job event's row has no bytes (`data` is empty): it names the
#: event (`job_id`, `job_sequence`), which the job tables hold. Files written before job
#: events were kept by reference lack the two columns; opening one adds them.
EVENT_LOG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS stream_events (
        session TEXT NOT NULL,
        stream TEXT NOT NULL,
        position INTEGER NOT NULL,
        data BLOB NOT NULL,
        job_id TEXT,
        job_sequence INTEGER,
        PRIMARY KEY (session, stream, position)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS stream_events_by_job_event"
    " ON stream_events (session, stream, job_id, job_sequence) WHERE job_id IS NOT NULL",
)
#: The columns every layout of `stream_events` has had.
_EVENT_LOG_COLUMNS: Final = frozenset({"session", "stream", "position", "data"})


def prepare_session_table(db: sqlite3.Connection) -> None:
    """Create the tables of shared sessions and of what replicas send each other."""
    db.execute(SESSION_TABLE)
    for statement in REPLICA_TABLES:
        db.execute(statement)


def prepare_event_table(db: sqlite3.Connection) -> None:
    """Create the event log's table, or add the job event columns to one written before them.

    The layout is read from the table itself, not `PRAGMA user_version`, which the job
    tables of the same file own. The columns added are nullable, so a herald that predates
    them still writes its rows to the upgraded table.
    """
    with transaction(db):
        columns = {str(row[1]) for row in db.execute("PRAGMA table_info(stream_events)")}
        if columns and not columns >= _EVENT_LOG_COLUMNS:
            raise StoreError(
                f"the store has a 'stream_events' table herald did not write (columns {sorted(columns)})"
            )
        if columns and "job_id" not in columns:
            db.execute("ALTER TABLE stream_events ADD COLUMN job_id TEXT")
            db.execute("ALTER TABLE stream_events ADD COLUMN job_sequence INTEGER")
        for statement in EVENT_LOG_SCHEMA:
            db.execute(statement)


def prepare_job_tables(db: sqlite3.Connection) -> None:
    """Create the job tables, or bring a file of an earlier layout up to this one.

    A file written by a newer herald is refused rather than guessed at: writing to a
    layout this code does not know could lose what that version keeps.
    """
    with transaction(db):
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version == JOB_SCHEMA_VERSION:
            return
        if version > JOB_SCHEMA_VERSION:
            raise StoreError(
                f"the store's job tables have layout {version}, written by a newer herald; "
                f"this one reads layout {JOB_SCHEMA_VERSION}. Upgrade herald or use another store."
            )
        if version in UPGRADES:  # one step after the other, up to this layout
            for step in range(version, JOB_SCHEMA_VERSION):
                for statement in UPGRADES[step]:
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {JOB_SCHEMA_VERSION}")
            return
        columns = {str(row[1]) for row in db.execute("PRAGMA table_info(jobs)")}
        if columns and columns != {"job_id", "status", "record"}:
            raise StoreError(f"the store has a 'jobs' table herald did not write (columns {sorted(columns)})")
        if columns:
            db.execute("ALTER TABLE jobs RENAME TO jobs_v1")
            db.execute("DROP INDEX IF EXISTS jobs_by_status")
        for statement in JOB_SCHEMA:
            db.execute(statement)
        if columns:
            _migrate_from_records(db)
        db.execute(f"PRAGMA user_version = {JOB_SCHEMA_VERSION}")


def _migrate_from_records(db: sqlite3.Connection) -> None:
    """Layout 1 to 2: split each job's one JSON record into its fixed part and its status."""
    for (record,) in db.execute("SELECT record FROM jobs_v1 ORDER BY rowid").fetchall():
        insert_job(db, JobRecord.from_json(orjson.loads(record)))
    db.execute("DROP TABLE jobs_v1")


def insert_job(db: sqlite3.Connection, job: JobRecord) -> None:
    """Write a new job: what started it (once, for good) and its first status.

    Here, beside the tables, because both the store and the upgrade from layout 1 write one.
    """
    db.execute(
        "INSERT INTO jobs (job_id, tool, created_at, owner, progress_token, arguments, retain_seconds,"
        " trace_context) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            job.job_id,
            job.tool,
            job.created_at,
            job.owner,
            orjson.dumps(job.progress_token),
            orjson.dumps(job.arguments),
            job.retain_seconds,
            orjson.dumps(job.trace_context) if job.trace_context is not None else None,
        ),
    )
    db.execute(
        "INSERT INTO job_status (job_id, status, percentage, stage, eta_seconds, sequence,"
        " result_uri, summary, error, updated_at, worker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (job.job_id, *status_row(job)),
    )


def status_row(job: JobRecord) -> tuple[Any, ...]:
    """The values of a job's `job_status` columns, job_id aside, in the order they are declared."""
    error = orjson.dumps(job.error) if job.error is not None else None
    return (
        job.status,
        job.percentage,
        job.stage,
        job.eta_seconds,
        job.sequence,
        job.result_uri,
        job.summary,
        error,
        job.updated_at,
        job.worker,
    )
