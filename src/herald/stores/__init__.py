"""Durable state, named by role (`EventLog`) with implementations named by backend."""

from herald.stores.errors import StoreError
from herald.stores.eventlog import EventLog, StoredEvent
from herald.stores.memory import MemoryEventLog
from herald.stores.sqlite import SqliteEventLog

__all__ = ["EventLog", "MemoryEventLog", "SqliteEventLog", "StoreError", "StoredEvent"]
