"""`SqliteEventLog`: the HTTP event log in the store file, in its table `stream_events`."""

from __future__ import annotations

from pathlib import Path

from herald.stores.eventlog import JobEventReference, StoredEvent
from herald.stores.sqlite.connection import (
    SQLITE_ERRORS,
    ConnectionFactory,
    connect,
    fetch_all,
    open_on,
    prepared,
    transaction,
    write,
)
from herald.stores.sqlite.schema import prepare_event_table
from herald.stores.thread import StoreThread


class SqliteEventLog:
    """An `EventLog` in a SQLite file; each append is committed before it returns.

    `connect` opens the file (on the store's thread), as for `SqliteJobStore`.
    """

    def __init__(self, path: str | Path, *, connect: ConnectionFactory = connect) -> None:
        self._thread = StoreThread("herald-sqlite-events", SQLITE_ERRORS)
        self._db = open_on(self._thread, lambda: prepared(connect(path), prepare_event_table))

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
            fetch_all,
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
            fetch_all,
            self._db,
            "SELECT MIN(position) FROM stream_events"
            " WHERE session = ? AND stream = ? AND job_id = ? AND job_sequence = ?",
            (session, stream, job_id, sequence),
        )
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    async def forget(self, session: str) -> None:
        await self._thread.call(write, self._db, "DELETE FROM stream_events WHERE session = ?", (session,))

    async def forget_stream(self, session: str, stream: str) -> None:
        await self._thread.call(
            write,
            self._db,
            "DELETE FROM stream_events WHERE session = ? AND stream = ?",
            (session, stream),
        )

    async def aclose(self) -> None:
        await self._thread.aclose(self._db.close)
