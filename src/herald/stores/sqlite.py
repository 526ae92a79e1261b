"""Stores in one SQLite file: the embedded default, durable across restarts.

The file runs in WAL mode with `synchronous=NORMAL`: a committed event survives a
crash of the process (the OS still holds it), and readers never block the writer.

No statement runs on the event loop. SQLite usually answers in microseconds, but a file
another process holds locked makes a statement wait (up to the 5 s busy timeout), and on
the loop that wait stalled every connection of the server. Each store owns one thread
(`StoreThread`) with its own connection, and every statement or transaction is a call on
it: the loop only waits on a future, and one thread keeps the store's calls in the order
they were made. The constructor opens the file on that thread and waits for it, so a
file the store cannot use is refused there, before the server serves anything.

Every `sqlite3.Error` leaves a store as `StoreError` (with the original chained), and a
write that fails is rolled back whole, so a failed write leaves nothing half-done and the
next write starts clean.

Jobs are kept in two tables because their parts change at different rates: `jobs` holds
what started a job (its arguments may be megabytes) and is written once; `job_status`
holds the few small fields an event changes. An event is one row appended to
`job_events` plus an update of the job's `job_status` row, whatever the arguments weigh.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from herald.jobs.events import JobEvent, timestamp
from herald.jobs.record import JobRecord, epoch_seconds
from herald.jobs.store import Hear, JobChanged, Subscribed
from herald.private_files import ensure_private_file
from herald.stores.errors import JobMissing, StoreError
from herald.stores.eventlog import JobEventReference, StoredEvent
from herald.stores.group_writer import GroupWriter
from herald.stores.sessions import HearMessage, SessionRecord
from herald.stores.thread import StoreThread

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
#: How long a message between replicas stays in the file: far longer than one look takes.
KEEP_MESSAGES_SECONDS: Final = 60.0

#: What `follow_writers` reads: the jobs changed since a moment.
CHANGES_INDEX: Final = "CREATE INDEX IF NOT EXISTS job_status_by_update ON job_status (updated_at)"

#: The layout of the job tables this code reads and writes, kept in `PRAGMA user_version`.
#: Version 1 (never written to the pragma, which read 0) kept each job as one JSON record;
#: version 2 had no workers (no `job_status.worker`, no `workers` or `job_checkpoints`);
#: version 3 had no retention (no `jobs.retain_seconds`, no `expired_jobs`); version 4 had
#: no index of recent changes (`job_status_by_update`, which processes follow each other by).
JOB_SCHEMA_VERSION: Final = 5

#: How often a process looks for the job events other processes wrote to the file.
FOLLOW_EVERY_SECONDS: Final = 0.2
#: How far back each look reaches past the last: longer than any write takes to commit.
FOLLOW_OVERLAP_SECONDS: Final = 5.0
#: How many jobs' last seen event a follower remembers (the oldest are forgotten first).
FOLLOWED_JOBS: Final = 10_000

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
}

#: A lease that lapsed this long ago is deleted on the next renewal of any worker.
FORGET_LEASES_AFTER: Final = 3600.0

JOB_SCHEMA: Final = (
    """CREATE TABLE jobs (
        job_id TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        created_at TEXT NOT NULL,
        owner TEXT,
        progress_token BLOB,
        arguments BLOB NOT NULL,
        retain_seconds REAL
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

#: The columns of a job, in the order `_SELECT_JOB` reads them.
_SELECT_JOB: Final = (
    "SELECT jobs.job_id, tool, created_at, owner, progress_token, arguments, retain_seconds,"
    " status, percentage, stage, eta_seconds, sequence, result_uri, summary, error, updated_at, worker"
    " FROM jobs JOIN job_status ON job_status.job_id = jobs.job_id"
)

#: sqlite3's errors leave the store as ours, the original chained.
SQLITE_ERRORS: Final[Mapping[type[Exception], type[Exception]]] = {sqlite3.Error: StoreError}

ConnectionFactory = Callable[[str | Path], sqlite3.Connection]


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at its start so two writers never both read stale state.

    If any statement or the COMMIT itself fails (a full disk fails at COMMIT as often as
    at an INSERT), the transaction is rolled back, so the connection is never left inside
    a transaction that would refuse every later BEGIN.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.rollback()
        raise


def connect(
    path: str | Path,
    *,
    factory: type[sqlite3.Connection] = sqlite3.Connection,
    busy_timeout: float = 5.0,
) -> sqlite3.Connection:
    """Open (and create) a store file with the settings every herald store relies on.

    `busy_timeout` is how many seconds a statement waits for a lock another connection
    holds before it fails (as `StoreError`). The wait is on the store's thread, never on
    the loop, so only that store's calls queue behind it.
    """
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        ensure_private_file(path)  # it holds what people sent; no other user reads it
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, factory=factory)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    return connection


class SqliteEventLog:
    """An `EventLog` in a SQLite file; each append is committed before it returns.

    `connect` opens the file (on the store's thread), as for `SqliteJobStore`.
    """

    def __init__(self, path: str | Path, *, connect: ConnectionFactory = connect) -> None:
        self._thread = StoreThread("herald-sqlite-events", SQLITE_ERRORS)
        self._db = _open_on(self._thread, lambda: _prepared(connect(path), prepare_event_table))

    async def append(self, session: str, stream: str, data: bytes) -> int:
        return await self._thread.call(self._append, session, stream, data, None, None)

    async def append_job_event(self, session: str, stream: str, job_id: str, sequence: int) -> int:
        return await self._thread.call(self._append, session, stream, b"", job_id, sequence)

    def _append(
        self, session: str, stream: str, data: bytes, job_id: str | None, job_sequence: int | None
    ) -> int:
        with transaction(self._db) as db:
            # Read the last position and write the next in one transaction.
            row = db.execute(
                "SELECT COALESCE(MAX(position), 0) FROM stream_events WHERE session = ? AND stream = ?",
                (session, stream),
            ).fetchone()
            position = int(row[0]) + 1
            db.execute(
                "INSERT INTO stream_events (session, stream, position, data, job_id, job_sequence)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session, stream, position, data, job_id, job_sequence),
            )
        return position

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        rows = await self._thread.call(
            _fetch_all,
            self._db,
            "SELECT position, data, job_id, job_sequence FROM stream_events"
            " WHERE session = ? AND stream = ? AND position > ? ORDER BY position",
            (session, stream, position),
        )
        return [
            StoredEvent(int(found), bytes(data))
            if job_id is None
            else StoredEvent(int(found), job_event=JobEventReference(str(job_id), int(sequence)))
            for found, data, job_id, sequence in rows
        ]

    async def position_of_job_event(
        self, session: str, stream: str, job_id: str, sequence: int
    ) -> int | None:
        rows = await self._thread.call(
            _fetch_all,
            self._db,
            "SELECT MIN(position) FROM stream_events"
            " WHERE session = ? AND stream = ? AND job_id = ? AND job_sequence = ?",
            (session, stream, job_id, sequence),
        )
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    async def forget(self, session: str) -> None:
        await self._thread.call(_write, self._db, "DELETE FROM stream_events WHERE session = ?", (session,))

    async def forget_stream(self, session: str, stream: str) -> None:
        await self._thread.call(
            _write,
            self._db,
            "DELETE FROM stream_events WHERE session = ? AND stream = ?",
            (session, stream),
        )

    async def aclose(self) -> None:
        await self._thread.aclose(self._db.close)


class SqliteJobStore:
    """A `JobStore` in a SQLite file; a job's state and its event commit together.

    The events of concurrent jobs are committed in groups (`GroupWriter`): those made
    while a transaction is being written go together in the next, each with its own
    compare-and-set. `connect` opens the file (on the store's thread); tests pass one
    whose connection fails on purpose.
    """

    durable = True

    def __init__(
        self,
        path: str | Path,
        *,
        connect: ConnectionFactory = connect,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._thread = StoreThread("herald-sqlite-jobs", SQLITE_ERRORS)
        self._db = _open_on(self._thread, lambda: _prepared(connect(path), prepare_job_tables))
        self._records: GroupWriter[list[tuple[JobRecord, JobEvent]]] = GroupWriter(self._record_batch)

    async def create(self, job: JobRecord, event: JobEvent) -> None:
        await self._thread.call(self._create, job, event)

    def _create(self, job: JobRecord, event: JobEvent) -> None:
        with transaction(self._db) as db:
            _insert_job(db, job)
            _append_events(db, [event])

    async def record(self, job: JobRecord, event: JobEvent) -> None:
        await self._records.write([(job, event)])

    async def record_chain(self, chain: list[tuple[JobRecord, JobEvent]]) -> None:
        await self._records.write(chain)

    async def _record_batch(self, batch: list[list[tuple[JobRecord, JobEvent]]]) -> list[Exception | None]:
        return await self._thread.call(self._record_all, batch)

    def _record_all(self, batch: list[list[tuple[JobRecord, JobEvent]]]) -> list[Exception | None]:
        """One transaction for the batch; a chain another writer got ahead of writes nothing."""
        with transaction(self._db) as db:
            return [_record_chain(db, chain) for chain in batch]

    async def get(self, job_id: str) -> JobRecord | None:
        rows = await self._thread.call(
            _fetch_all, self._db, f"{_SELECT_JOB} WHERE jobs.job_id = ?", (job_id,)
        )
        return _job_of(rows[0]) if rows else None

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        rows = await self._thread.call(
            _fetch_all,
            self._db,
            "SELECT event FROM job_events WHERE job_id = ? AND sequence > ? ORDER BY sequence",
            (job_id, sequence),
        )
        return [JobEvent.from_params(orjson.loads(row[0])) for row in rows]

    async def unfinished(self) -> list[JobRecord]:
        rows = await self._thread.call(
            _fetch_all,
            self._db,
            f"{_SELECT_JOB} WHERE status IN ('pending', 'running') ORDER BY jobs.rowid",
            (),
        )
        return [_job_of(row) for row in rows]

    async def renew_lease(self, worker: str, seconds: float) -> None:
        now = self._clock()
        await self._thread.call(self._renew, worker, now + seconds, now - FORGET_LEASES_AFTER)

    def _renew(self, worker: str, expires_at: float, forget_before: float) -> None:
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO workers (worker, expires_at) VALUES (?, ?)"
                " ON CONFLICT (worker) DO UPDATE SET expires_at = excluded.expires_at",
                (worker, expires_at),
            )
            db.execute("DELETE FROM workers WHERE expires_at < ?", (forget_before,))

    async def release_lease(self, worker: str) -> None:
        await self._thread.call(_write, self._db, "DELETE FROM workers WHERE worker = ?", (worker,))

    async def orphaned(self) -> list[JobRecord]:
        rows = await self._thread.call(
            _fetch_all,
            self._db,
            f"{_SELECT_JOB} WHERE status IN ('pending', 'running') AND (worker IS NULL OR worker NOT IN"
            " (SELECT worker FROM workers WHERE expires_at > ?)) ORDER BY jobs.rowid",
            (self._clock(),),
        )
        return [_job_of(row) for row in rows]

    async def job_ids(self, owner: str | None = None) -> list[str]:
        parameters: tuple[str, ...]
        if owner is None:
            query, parameters = "SELECT job_id FROM jobs ORDER BY rowid", ()
        else:
            query, parameters = "SELECT job_id FROM jobs WHERE owner = ? ORDER BY rowid", (owner,)
        rows = await self._thread.call(_fetch_all, self._db, query, parameters)
        return [str(row[0]) for row in rows]

    async def follow_writers(self, hear: Hear, subscribed: Subscribed | None = None) -> None:
        """Hear of the events other processes write to this file, until cancelled.

        SQLite has no way to tell another process of a commit, so this looks, every
        `FOLLOW_EVERY_SECONDS`, at the jobs changed lately: `hear(job_id, sequence, since)`
        is called with the job's latest event and the last one seen before it, and reads
        what it has not told from the job's events, which are the truth. The window
        reaches `FOLLOW_OVERLAP_SECONDS` back, so a write committed late with an earlier
        timestamp (another process's clock read before ours) is still seen; what was seen
        already is skipped. `subscribed` is called after the first look: what was written
        before the window (a follow started again after the file could not be read) is
        the caller's to catch up on.
        """
        started = timestamp(datetime.fromtimestamp(self._clock(), UTC))
        seen: collections.OrderedDict[str, int] = collections.OrderedDict()
        while True:
            await asyncio.sleep(FOLLOW_EVERY_SECONDS)
            window = timestamp(datetime.fromtimestamp(self._clock() - FOLLOW_OVERLAP_SECONDS, UTC))
            rows = await self._thread.call(
                _fetch_all,
                self._db,
                "SELECT job_status.job_id, sequence, created_at FROM job_status JOIN jobs"
                " ON jobs.job_id = job_status.job_id WHERE updated_at >= ?",
                (window,),
            )
            if subscribed is not None:
                await subscribed()
                subscribed = None
            for job_id, sequence, created_at in rows:
                last = seen.get(job_id)
                if last is not None and sequence <= last:
                    continue
                # A job created since we began is told from its first event; an older one
                # from the event that brought it into view.
                since = last if last is not None else 0 if created_at >= started else sequence - 1
                seen[job_id] = sequence
                seen.move_to_end(job_id)
                if len(seen) > FOLLOWED_JOBS:
                    seen.popitem(last=False)
                await hear(job_id, sequence, since)

    async def prune(self, now: float, retention: float) -> list[str]:
        return await self._thread.call(self._prune, now, retention)

    def _prune(self, now: float, retention: float) -> list[str]:
        with transaction(self._db) as db:
            ended = db.execute(
                "SELECT job_status.job_id, updated_at, retain_seconds FROM job_status JOIN jobs"
                " ON jobs.job_id = job_status.job_id WHERE status IN ('completed', 'failed', 'cancelled')"
            ).fetchall()
            gone = [
                (job_id,)
                for job_id, updated_at, retain in ended
                if epoch_seconds(updated_at) + (retain if retain is not None else retention) < now
            ]
            for table in ("job_events", "job_results", "job_checkpoints", "job_status", "jobs"):
                db.executemany(f"DELETE FROM {table} WHERE job_id = ?", gone)
            db.executemany("INSERT OR IGNORE INTO expired_jobs (job_id) VALUES (?)", gone)
        return [job_id for (job_id,) in gone]

    async def expired(self, job_id: str) -> bool:
        rows = await self._thread.call(
            _fetch_all, self._db, "SELECT 1 FROM expired_jobs WHERE job_id = ?", (job_id,)
        )
        return bool(rows)

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        await self._thread.call(
            _write,
            self._db,
            "INSERT OR REPLACE INTO job_checkpoints (job_id, state) VALUES (?, ?)",
            (job_id, state),
        )

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        rows = await self._thread.call(
            _fetch_all, self._db, "SELECT state FROM job_checkpoints WHERE job_id = ?", (job_id,)
        )
        return bytes(rows[0][0]) if rows else None

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        await self._thread.call(
            _write,
            self._db,
            "INSERT OR REPLACE INTO job_results (job_id, name, mime_type, data) VALUES (?, ?, ?, ?)",
            (job_id, name, mime_type, data),
        )

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        rows = await self._thread.call(
            _fetch_all,
            self._db,
            "SELECT mime_type, data FROM job_results WHERE job_id = ? AND name = ?",
            (job_id, name),
        )
        return (str(rows[0][0]), bytes(rows[0][1])) if rows else None

    async def aclose(self) -> None:
        await self._records.aclose()
        await self._thread.aclose(self._db.close)


class SqliteSessionStore:
    """A `SessionStore` in a SQLite file, for servers on one machine that share a file.

    Expiry is a deadline in seconds since the epoch (the processes share the machine's
    clock); a session past it is gone to `load`, and its row is deleted by the next `save`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        connect: ConnectionFactory = connect,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._thread = StoreThread("herald-sqlite-sessions", SQLITE_ERRORS)
        self._db = _open_on(self._thread, lambda: _prepared(connect(path), _prepare_session_table))

    async def save(self, record: SessionRecord, ttl: float) -> None:
        await self._thread.call(self._save, record.session_id, record.to_json(), self._clock(), ttl)

    def _save(self, session_id: str, data: bytes, now: float, ttl: float) -> None:
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO http_sessions (session_id, record, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET record = excluded.record,"
                " expires_at = excluded.expires_at",
                (session_id, data, now + ttl),
            )
            db.execute("DELETE FROM http_sessions WHERE expires_at <= ?", (now,))

    async def load(self, session_id: str, ttl: float | None) -> SessionRecord | None:
        return await self._thread.call(self._load, session_id, self._clock(), ttl)

    def _load(self, session_id: str, now: float, ttl: float | None) -> SessionRecord | None:
        with transaction(self._db) as db:
            row = db.execute(
                "SELECT record FROM http_sessions WHERE session_id = ? AND expires_at > ?", (session_id, now)
            ).fetchone()
            if row is None:
                return None
            if ttl is not None:
                db.execute(
                    "UPDATE http_sessions SET expires_at = ? WHERE session_id = ?", (now + ttl, session_id)
                )
        return SessionRecord.from_json(session_id, bytes(row[0]))

    async def delete(self, session_id: str) -> bool:
        return await self._thread.call(self._delete, session_id, self._clock())

    def _delete(self, session_id: str, now: float) -> bool:
        with transaction(self._db) as db:
            return (
                db.execute(
                    "DELETE FROM http_sessions WHERE session_id = ? AND expires_at > ?", (session_id, now)
                ).rowcount
                == 1
            )

    async def shared_key(self) -> bytes:
        return await self._thread.call(self._shared_key, secrets.token_bytes(32))

    def _shared_key(self, candidate: bytes) -> bytes:
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO replica_keys (name, value) VALUES ('request-state', ?) ON CONFLICT DO NOTHING",
                (candidate,),
            )
            return bytes(
                db.execute("SELECT value FROM replica_keys WHERE name = 'request-state'").fetchone()[0]
            )

    async def publish(self, message: bytes) -> None:
        await self._thread.call(self._publish, message, self._clock())

    def _publish(self, message: bytes, now: float) -> None:
        with transaction(self._db) as db:
            db.execute("INSERT INTO replica_messages (sent_at, body) VALUES (?, ?)", (now, message))
            db.execute("DELETE FROM replica_messages WHERE sent_at < ?", (now - KEEP_MESSAGES_SECONDS,))

    async def follow(self, hear: HearMessage) -> None:
        """Look for new messages every `FOLLOW_EVERY_SECONDS` (SQLite cannot announce a commit)."""
        last = (await self._thread.call(_fetch_all, self._db, "SELECT max(id) FROM replica_messages", ()))[0][
            0
        ]
        last = last or 0
        while True:
            await asyncio.sleep(FOLLOW_EVERY_SECONDS)
            rows = await self._thread.call(
                _fetch_all,
                self._db,
                "SELECT id, body FROM replica_messages WHERE id > ? ORDER BY id",
                (last,),
            )
            for message_id, body in rows:
                last = message_id
                await hear(bytes(body))

    async def aclose(self) -> None:
        await self._thread.aclose(self._db.close)


def _prepare_session_table(db: sqlite3.Connection) -> None:
    db.execute(SESSION_TABLE)
    for statement in REPLICA_TABLES:
        db.execute(statement)


def _open_on(thread: StoreThread, open_file: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
    """Open the file on the store's thread; if that fails, stop the thread and raise `StoreError`."""
    try:
        return thread.call_now(open_file)
    except BaseException:
        thread.abandon()
        raise


def _prepared(db: sqlite3.Connection, prepare: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
    """`db` once `prepare` has made its tables ready; closed if it could not."""
    try:
        prepare(db)
    except BaseException:
        db.close()
        raise
    return db


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


def _fetch_all(db: sqlite3.Connection, query: str, parameters: tuple[Any, ...]) -> list[Any]:
    """One read (on the store's thread)."""
    return db.execute(query, parameters).fetchall()


def _write(db: sqlite3.Connection, statement: str, parameters: tuple[Any, ...]) -> None:
    """One statement in its own write transaction (on the store's thread)."""
    with transaction(db):
        db.execute(statement, parameters)


def _insert_job(db: sqlite3.Connection, job: JobRecord) -> None:
    """Write a new job: what started it (once, for good) and its first status."""
    db.execute(
        "INSERT INTO jobs (job_id, tool, created_at, owner, progress_token, arguments, retain_seconds)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            job.job_id,
            job.tool,
            job.created_at,
            job.owner,
            orjson.dumps(job.progress_token),
            orjson.dumps(job.arguments),
            job.retain_seconds,
        ),
    )
    db.execute(
        "INSERT INTO job_status (job_id, status, percentage, stage, eta_seconds, sequence,"
        " result_uri, summary, error, updated_at, worker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (job.job_id, *_status_row(job)),
    )


def _record_chain(db: sqlite3.Connection, chain: list[tuple[JobRecord, JobEvent]]) -> Exception | None:
    """Write the events and the job's last status if the job is at the sequence before them."""
    job, first = chain[-1][0], chain[0][1]
    changed = db.execute(
        "UPDATE job_status SET status = ?, percentage = ?, stage = ?, eta_seconds = ?,"
        " sequence = ?, result_uri = ?, summary = ?, error = ?, updated_at = ?, worker = ?"
        " WHERE job_id = ? AND sequence = ?",
        (*_status_row(job), job.job_id, first.sequence - 1),
    ).rowcount
    if changed != 1:
        if db.execute("SELECT 1 FROM job_status WHERE job_id = ?", (job.job_id,)).fetchone():
            return JobChanged(job.job_id)  # another process wrote an event first
        return JobMissing(job.job_id)
    _append_events(db, [event for _, event in chain])
    return None


def _status_row(job: JobRecord) -> tuple[Any, ...]:
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


def _append_events(db: sqlite3.Connection, events: list[JobEvent]) -> None:
    db.executemany(
        "INSERT INTO job_events (job_id, sequence, event) VALUES (?, ?, ?)",
        [(event.job_id, event.sequence, orjson.dumps(event.to_params())) for event in events],
    )


def _job_of(row: tuple[Any, ...]) -> JobRecord:
    job_id, tool, created_at, owner, token, arguments, retain_seconds, status, percentage, stage = row[:10]
    eta, sequence, result_uri, summary, error, updated_at, worker = row[10:]
    return JobRecord(
        job_id=job_id,
        tool=tool,
        created_at=created_at,
        updated_at=updated_at,
        status=status,
        percentage=percentage,
        stage=stage,
        eta_seconds=eta,
        owner=owner,
        progress_token=orjson.loads(token) if token is not None else None,
        result_uri=result_uri,
        summary=summary,
        error=orjson.loads(error) if error is not None else None,
        sequence=sequence,
        arguments=orjson.loads(arguments),
        worker=worker,
        retain_seconds=retain_seconds,
    )


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
        _insert_job(db, JobRecord.from_json(orjson.loads(record)))
    db.execute("DROP TABLE jobs_v1")
