"""Turn a store URL (`sqlite:///PATH`, `memory`) into an event log, with a sensible default."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from herald.stores.eventlog import EventLog
from herald.stores.memory import MemoryEventLog
from herald.stores.sqlite import SqliteEventLog


def default_store_path(app_name: str) -> Path:
    """The embedded store of an app: one SQLite file in the user's data directory."""
    return Path(platformdirs.user_data_dir(app_name)) / "store.db"


def open_event_log(url: str | None, *, app_name: str) -> tuple[EventLog, str]:
    """The event log a URL names, and a description of where it lives (for the start-up banner)."""
    if url is None:
        path = default_store_path(app_name)
        return SqliteEventLog(path), str(path)
    if url == "memory":
        return MemoryEventLog(), "memory (lost when the server stops)"
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        return SqliteEventLog(path), str(path)
    raise ValueError(f"unknown store {url!r}: use sqlite:///PATH or memory")
