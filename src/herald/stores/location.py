"""Turn a store URL (`sqlite:///relative.db`, `sqlite:////absolute.db`, a plain path,
`redis://HOST:PORT/DB`, `memory`) into the stores."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import platformdirs

from herald.extras import needs
from herald.jobs.store import JobStore
from herald.stores.eventlog import EventLog
from herald.stores.memory import MemoryEventLog, MemoryJobStore
from herald.stores.sessions import SessionStore
from herald.stores.sqlite import SqliteEventLog, SqliteJobStore, SqliteSessionStore


@dataclass(frozen=True, slots=True)
class Stores:
    """What a server keeps, and where: the HTTP event log, the jobs, the shared sessions."""

    log: EventLog
    jobs: JobStore
    #: None in memory: one process, whose sessions need no sharing.
    sessions: SessionStore | None
    #: Where they live, as a start-up banner may say it (no password).
    where: str


def default_store_path(app_name: str) -> Path:
    """The embedded store of an app: one SQLite file in the user's data directory."""
    return Path(platformdirs.user_data_dir(app_name)) / "store.db"


def open_stores(url: str | None, *, app_name: str, sessions: bool = True) -> Stores:
    """The stores a URL names.

    They all live in the same place (one SQLite file, one Redis database), so every
    process given the same URL shares jobs, event streams and sessions. `sessions=False`
    for a process that serves no HTTP sessions (stdio, a worker): none is opened.
    """
    if url == "memory":
        return Stores(MemoryEventLog(), MemoryJobStore(), None, "memory (lost when the server stops)")
    if url is not None and url.startswith(("redis://", "rediss://")):
        with needs("redis", "a Redis store"):
            from herald.stores.redis import RedisEventLog, RedisJobStore, RedisSessionStore

        return Stores(
            RedisEventLog.from_url(url),
            RedisJobStore.from_url(url),
            RedisSessionStore.from_url(url) if sessions else None,
            _without_password(url),
        )
    path = default_store_path(app_name) if url is None else sqlite_path(url)
    shared = SqliteSessionStore(path) if sessions else None
    return Stores(SqliteEventLog(path), SqliteJobStore(path), shared, str(path))


#: A scheme and a colon: a URL, perhaps misspelt (`redis:/typo`), never a plain path.
_LOOKS_LIKE_A_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: How a plain path to a SQLite file may end; anything else without a scheme is a typo.
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
STORE_FORMS = (
    "use sqlite:///relative/path.db, sqlite:////absolute/path.db, a path ending in .db, "
    "redis://HOST:PORT/DB or memory"
)


def sqlite_path(url: str) -> Path:
    """The absolute path of the SQLite file a store URL names.

    `sqlite:///` is followed by the path as written, so `sqlite:///gifts.db` is relative to
    the working directory and `sqlite:////tmp/gifts.db` is absolute, as SQLAlchemy and
    most tools spell them. A plain path works too, when it looks like one (a `/`, or a
    database suffix), so that a misspelt URL such as `bogus` is refused, not created.
    """
    if url.startswith("sqlite:///"):
        written = url.removeprefix("sqlite:///")
    elif not _LOOKS_LIKE_A_URL.match(url) and ("/" in url or url.endswith(SQLITE_SUFFIXES)):
        written = url
    else:
        raise ValueError(f"unknown store {url!r}: {STORE_FORMS}")
    if not written or written.endswith("/"):
        raise ValueError(f"the store {url!r} names no file: {STORE_FORMS}")
    path = Path(written).expanduser().absolute()
    if path.is_dir():
        raise ValueError(f"the store {url!r} is a directory: name a file in it, e.g. {path / 'store.db'}")
    return path


def _without_password(url: str) -> str:
    """The URL as a banner may show it: a password in it is not printed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" if parts.username else f":***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
