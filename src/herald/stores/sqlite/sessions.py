"""`SqliteSessionStore`: sessions, the `requestState` key and messages that replicas on one machine share."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from herald.stores.sessions import HearMessage, SessionRecord
from herald.stores.sqlite.connection import (
    FOLLOW_EVERY_SECONDS,
    SQLITE_ERRORS,
    ConnectionFactory,
    connect,
    fetch_all,
    open_on,
    prepared,
    transaction,
)
from herald.stores.sqlite.schema import prepare_session_table
from herald.stores.thread import StoreThread

#: How long a message between replicas stays in the file: far longer than one look takes.
KEEP_MESSAGES_SECONDS: Final = 60.0


class SqliteSessionStore:
    """A `SessionStore` in a SQLite file, for servers on one machine that share a file.

    Expiry is a deadline in seconds since the epoch (the processes share the machine's
    clock); a session past it is gone to `load`, and its row is deleted by the next `save`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        connect: ConnectionFactory = connect,
        clock: Callable[[], float] = time.time,
        follow_every_seconds: float = FOLLOW_EVERY_SECONDS,
    ) -> None:
        self._clock = clock
        #: How often `follow` looks for what other processes wrote.
        self._follow_every = follow_every_seconds
        self._thread = StoreThread("herald-sqlite-sessions", SQLITE_ERRORS)
        self._db = open_on(self._thread, lambda: prepared(connect(path), prepare_session_table))

    async def save(self, record: SessionRecord, ttl: float) -> None:
        await self._thread.call(self._save, record.session_id, record.to_json(), self._clock(), ttl)

    def _save(self, session_id: str, data: bytes, now: float, ttl: float) -> None:
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO http_sessions (session_id, record, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET record = excluded.record,"
                " expires_at = excluded.expires_at",
                (session_id, data, now + ttl),
            )
            db.execute("DELETE FROM http_sessions WHERE expires_at <= ?", (now,))

    async def load(self, session_id: str, ttl: float | None) -> SessionRecord | None:
        return await self._thread.call(self._load, session_id, self._clock(), ttl)

    def _load(self, session_id: str, now: float, ttl: float | None) -> SessionRecord | None:
        with transaction(self._db) as db:
            row = db.execute(
                "SELECT record FROM http_sessions WHERE session_id = ? AND expires_at > ?", (session_id, now)
            ).fetchone()
            if row is None:
                return None
            if ttl is not None:
                db.execute(
                    "UPDATE http_sessions SET expires_at = ? WHERE session_id = ?", (now + ttl, session_id)
                )
        return SessionRecord.from_json(session_id, bytes(row[0]))

    async def delete(self, session_id: str) -> bool:
        return await self._thread.call(self._delete, session_id, self._clock())

    def _delete(self, session_id: str, now: float) -> bool:
        with transaction(self._db) as db:
            return (
                db.execute(
                    "DELETE FROM http_sessions WHERE session_id = ? AND expires_at > ?", (session_id, now)
                ).rowcount
                == 1
            )

    async def shared_key(self) -> bytes:
        return await self._thread.call(self._shared_key, secrets.token_bytes(32))

    def _shared_key(self, candidate: bytes) -> bytes:
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO replica_keys (name, value) VALUES ('request-state', ?) ON CONFLICT DO NOTHING",
                (candidate,),
            )
            return bytes(
                db.execute("SELECT value FROM replica_keys WHERE name = 'request-state'").fetchone()[0]
            )

    async def publish(self, message: bytes) -> None:
        await self._thread.call(self._publish, message, self._clock())

    def _publish(self, message: bytes, now: float) -> None:
        with transaction(self._db) as db:
            db.execute("INSERT INTO replica_messages (sent_at, body) VALUES (?, ?)", (now, message))
            db.execute("DELETE FROM replica_messages WHERE sent_at < ?", (now - KEEP_MESSAGES_SECONDS,))

    async def follow(self, hear: HearMessage) -> None:
        """Look for new messages every `follow_every_seconds` (SQLite cannot announce a commit)."""
        last = (await self._thread.call(fetch_all, self._db, "SELECT max(id) FROM replica_messages", ()))[0][
            0
        ]
        last = last or 0
        while True:
            await asyncio.sleep(self._follow_every)
            rows = await self._thread.call(
                fetch_all,
                self._db,
                "SELECT id, body FROM replica_messages WHERE id > ? ORDER BY id",
                (last,),
            )
            for message_id, body in rows:
                last = message_id
                await hear(bytes(body))

    async def aclose(self) -> None:
        await self._thread.aclose(self._db.close)
