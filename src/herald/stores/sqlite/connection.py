"""Opening a store file, and running statements on it: what every SQLite store shares.

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
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from herald.private_files import ensure_private_file
from herald.stores.errors import StoreError
from herald.stores.thread import StoreThread

#: sqlite3's errors leave the store as ours, the original chained.
SQLITE_ERRORS: Final[Mapping[type[Exception], type[Exception]]] = {sqlite3.Error: StoreError}

#: How often a process looks for the job events (and the messages between replicas) other
#: processes wrote to the file.
FOLLOW_EVERY_SECONDS: Final = 0.2

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


def open_on(thread: StoreThread, open_file: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
    """Open the file on the store's thread; if that fails, stop the thread and raise `StoreError`."""
    try:
        return thread.call_now(open_file)
    except BaseException:
        thread.abandon()
        raise


def prepared(db: sqlite3.Connection, prepare: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
    """`db` once `prepare` has made its tables ready; closed if it could not."""
    try:
        prepare(db)
    except BaseException:
        db.close()
        raise
    return db


def fetch_all(db: sqlite3.Connection, query: str, parameters: tuple[Any, ...]) -> list[Any]:
    """One read (on the store's thread)."""
    return db.execute(query, parameters).fetchall()


def write(db: sqlite3.Connection, statement: str, parameters: tuple[Any, ...]) -> None:
    """One statement in its own write transaction (on the store's thread)."""
    with transaction(db):
        db.execute(statement, parameters)
