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

from herald.stores.eventlog import StoredEvent

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

    async def aclose(self) -> None:
        self._db.close()
