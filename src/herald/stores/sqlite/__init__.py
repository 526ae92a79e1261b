"""Stores in one SQLite file: the embedded default, durable across restarts.

- `connection`: opening the file (`connect`, WAL), transactions, the store's thread, and
  the map of `sqlite3` errors to `StoreError` (`SQLITE_ERRORS`).
- `schema`: the tables, their layout version (`JOB_SCHEMA_VERSION`), and the upgrades of
  files written by an earlier herald (`prepare_job_tables`, `prepare_event_table`).
- `eventlog`: `SqliteEventLog`, the HTTP event log.
- `jobs`: `SqliteJobStore`, jobs, their events, results, checkpoints and workers' leases.
- `sessions`: `SqliteSessionStore`, the sessions and messages of replicas sharing the file.
"""

from herald.stores.sqlite.connection import SQLITE_ERRORS, connect
from herald.stores.sqlite.eventlog import SqliteEventLog
from herald.stores.sqlite.jobs import SqliteJobStore
from herald.stores.sqlite.schema import JOB_SCHEMA_VERSION
from herald.stores.sqlite.sessions import SqliteSessionStore

__all__ = [
    "JOB_SCHEMA_VERSION",
    "SQLITE_ERRORS",
    "SqliteEventLog",
    "SqliteJobStore",
    "SqliteSessionStore",
    "connect",
]
