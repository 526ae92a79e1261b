"""`SqliteJobStore`: jobs, their events, results and checkpoints, and workers' leases.

The tables are `schema`'s. A job is written once (`insert_job`); each event after it is
one row of `job_events` and an update of the job's `job_status` row.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from herald.jobs.events import JobEvent, timestamp
from herald.jobs.record import JobRecord, epoch_seconds
from herald.jobs.store import Hear, JobChanged, Subscribed
from herald.stores.errors import JobMissing
from herald.stores.group_writer import GroupWriter
from herald.stores.sqlite.connection import (
    FOLLOW_EVERY_SECONDS,
    SQLITE_ERRORS,
    ConnectionFactory,
    connect,
    fetch_all,
    open_on,
    prepared,
    transaction,
    write,
)
from herald.stores.sqlite.schema import insert_job, prepare_job_tables, status_row
from herald.stores.thread import StoreThread

#: How far back each look reaches past the last: longer than any write takes to commit.
FOLLOW_OVERLAP_SECONDS: Final = 5.0
#: How many jobs' last seen event a follower remembers (the oldest are forgotten first).
FOLLOWED_JOBS: Final = 10_000

#: A lease that lapsed this long ago is deleted on the next renewal of any worker.
FORGET_LEASES_AFTER: Final = 3600.0

#: The columns of a job, in the order `_SELECT_JOB` reads them.
_SELECT_JOB: Final = (
    "SELECT jobs.job_id, tool, created_at, owner, progress_token, arguments, retain_seconds,"
    " status, percentage, stage, eta_seconds, sequence, result_uri, summary, error, updated_at, worker,"
    " trace_context FROM jobs JOIN job_status ON job_status.job_id = jobs.job_id"
)


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
        follow_every_seconds: float = FOLLOW_EVERY_SECONDS,
    ) -> None:
        self._clock = clock
        #: How often `follow_writers` looks for what other processes wrote.
        self._follow_every = follow_every_seconds
        self._thread = StoreThread("herald-sqlite-jobs", SQLITE_ERRORS)
        self._db = open_on(self._thread, lambda: prepared(connect(path), prepare_job_tables))
        self._records: GroupWriter[list[tuple[JobRecord, JobEvent]]] = GroupWriter(self._record_batch)

    async def create(self, job: JobRecord, event: JobEvent) -> None:
        await self._thread.call(self._create, job, event)

    def _create(self, job: JobRecord, event: JobEvent) -> None:
        with transaction(self._db) as db:
            insert_job(db, job)
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
        rows = await self._thread.call(fetch_all, self._db, f"{_SELECT_JOB} WHERE jobs.job_id = ?", (job_id,))
        return _job_of(rows[0]) if rows else None

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        rows = await self._thread.call(
            fetch_all,
            self._db,
            "SELECT event FROM job_events WHERE job_id = ? AND sequence > ? ORDER BY sequence",
            (job_id, sequence),
        )
        return [JobEvent.from_params(orjson.loads(row[0])) for row in rows]

    async def unfinished(self) -> list[JobRecord]:
        rows = await self._thread.call(
            fetch_all,
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
        await self._thread.call(write, self._db, "DELETE FROM workers WHERE worker = ?", (worker,))

    async def orphaned(self) -> list[JobRecord]:
        rows = await self._thread.call(
            fetch_all,
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
        rows = await self._thread.call(fetch_all, self._db, query, parameters)
        return [str(row[0]) for row in rows]

    async def follow_writers(self, hear: Hear, subscribed: Subscribed | None = None) -> None:
        """Hear of the events other processes write to this file, until cancelled.

        SQLite has no way to tell another process of a commit, so this looks, every
        `follow_every_seconds`, at the jobs changed lately: `hear(job_id, sequence, since)`
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
            await asyncio.sleep(self._follow_every)
            window = timestamp(datetime.fromtimestamp(self._clock() - FOLLOW_OVERLAP_SECONDS, UTC))
            rows = await self._thread.call(
                fetch_all,
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
            fetch_all, self._db, "SELECT 1 FROM expired_jobs WHERE job_id = ?", (job_id,)
        )
        return bool(rows)

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        await self._thread.call(
            write,
            self._db,
            "INSERT OR REPLACE INTO job_checkpoints (job_id, state) VALUES (?, ?)",
            (job_id, state),
        )

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        rows = await self._thread.call(
            fetch_all, self._db, "SELECT state FROM job_checkpoints WHERE job_id = ?", (job_id,)
        )
        return bytes(rows[0][0]) if rows else None

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        await self._thread.call(
            write,
            self._db,
            "INSERT OR REPLACE INTO job_results (job_id, name, mime_type, data) VALUES (?, ?, ?, ?)",
            (job_id, name, mime_type, data),
        )

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        rows = await self._thread.call(
            fetch_all,
            self._db,
            "SELECT mime_type, data FROM job_results WHERE job_id = ? AND name = ?",
            (job_id, name),
        )
        return (str(rows[0][0]), bytes(rows[0][1])) if rows else None

    async def aclose(self) -> None:
        await self._records.aclose()
        await self._thread.aclose(self._db.close)


def _record_chain(db: sqlite3.Connection, chain: list[tuple[JobRecord, JobEvent]]) -> Exception | None:
    """Write the events and the job's last status if the job is at the sequence before them."""
    job, first = chain[-1][0], chain[0][1]
    changed = db.execute(
        "UPDATE job_status SET status = ?, percentage = ?, stage = ?, eta_seconds = ?,"
        " sequence = ?, result_uri = ?, summary = ?, error = ?, updated_at = ?, worker = ?"
        " WHERE job_id = ? AND sequence = ?",
        (*status_row(job), job.job_id, first.sequence - 1),
    ).rowcount
    if changed != 1:
        if db.execute("SELECT 1 FROM job_status WHERE job_id = ?", (job.job_id,)).fetchone():
            return JobChanged(job.job_id)  # another process wrote an event first
        return JobMissing(job.job_id)
    _append_events(db, [event for _, event in chain])
    return None


def _append_events(db: sqlite3.Connection, events: list[JobEvent]) -> None:
    db.executemany(
        "INSERT INTO job_events (job_id, sequence, event) VALUES (?, ?, ?)",
        [(event.job_id, event.sequence, orjson.dumps(event.to_params())) for event in events],
    )


def _job_of(row: tuple[Any, ...]) -> JobRecord:
    job_id, tool, created_at, owner, token, arguments, retain_seconds, status, percentage, stage = row[:10]
    eta, sequence, result_uri, summary, error, updated_at, worker, trace_context = row[10:]
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
        trace_context=orjson.loads(trace_context) if trace_context is not None else None,
    )
