"""Durable state, named by role (`EventLog`) with implementations named by backend.

`SqliteEventLog` is imported on first use: a server that keeps its state in memory
(every stdio server by default) then never loads `sqlite3`, about 1 MiB and a few
milliseconds of start-up.
"""

from typing import TYPE_CHECKING, Any

from herald.stores.errors import StoreError
from herald.stores.eventlog import EventLog, JobEventReference, StoredEvent
from herald.stores.memory import MemoryEventLog

if TYPE_CHECKING:
    from herald.stores.sqlite import SqliteEventLog

__all__ = ["EventLog", "JobEventReference", "MemoryEventLog", "SqliteEventLog", "StoreError", "StoredEvent"]


def __getattr__(name: str) -> Any:
    if name == "SqliteEventLog":
        from herald.stores.sqlite import SqliteEventLog

        return SqliteEventLog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
