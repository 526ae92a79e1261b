"""Turn a store URL (`sqlite:///PATH`, `redis://HOST:PORT/DB`, `memory`) into the stores."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import platformdirs

from herald.jobs.store import JobStore
from herald.stores.eventlog import EventLog
from herald.stores.memory import MemoryEventLog, MemoryJobStore
from herald.stores.sqlite import SqliteEventLog, SqliteJobStore


def default_store_path(app_name: str) -> Path:
    """The embedded store of an app: one SQLite file in the user's data directory."""
    return Path(platformdirs.user_data_dir(app_name)) / "store.db"


def open_stores(url: str | None, *, app_name: str) -> tuple[EventLog, JobStore, str]:
    """The event log and job store a URL names, and where they live (for the start-up banner).

    Both live in the same SQLite file: one file holds everything an embedded server keeps.
    """
    if url == "memory":
        return MemoryEventLog(), MemoryJobStore(), "memory (lost when the server stops)"
    if url is not None and url.startswith(("redis://", "rediss://")):
        from herald.stores.redis import RedisEventLog, RedisJobStore

        return RedisEventLog.from_url(url), RedisJobStore.from_url(url), _without_password(url)
    if url is None:
        path = default_store_path(app_name)
    elif url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
    else:
        raise ValueError(f"unknown store {url!r}: use sqlite:///PATH, redis://HOST:PORT/DB or memory")
    return SqliteEventLog(path), SqliteJobStore(path), str(path)


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
