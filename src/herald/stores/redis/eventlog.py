"""`RedisEventLog`: the HTTP event log on Redis.

The event log keeps each stream as a Stream, as the job store keeps a job's events,
positions as entry ids (`N-0`); the append script (`scripts`) takes the next position.
"""

from __future__ import annotations

from typing import Any

from herald.stores.eventlog import JobEventReference, StoredEvent
from herald.stores.redis.client import StoreRedis, connect_redis
from herald.stores.redis.scripts import APPEND_SCRIPT


class RedisEventLog:
    """An `EventLog` on Redis: one Stream per stream of a session, positions as entry ids."""

    def __init__(self, client: StoreRedis, *, prefix: str = "herald") -> None:
        self._redis = client
        self._prefix = prefix
        self._append = client.register_script(APPEND_SCRIPT)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisEventLog:
        return cls(connect_redis(url), **options)

    def _key(self, session: str, part: str) -> str:
        return f"{self._prefix}:{{s:{session}}}:{part}"

    def _keys(self, session: str, stream: str) -> list[str]:
        return [
            self._key(session, f"stream:{stream}"),
            self._key(session, f"n:{stream}"),
            self._key(session, f"jobs:{stream}"),
        ]

    async def _add(self, session: str, stream: str, args: list[Any]) -> int:
        await self._redis.sadd(self._key(session, "streams"), stream)
        position: int = await self._append(keys=self._keys(session, stream), args=args)
        return position

    async def append(self, session: str, stream: str, data: bytes) -> int:
        return await self._add(session, stream, [data, "", ""])

    async def append_job_event(self, session: str, stream: str, job_id: str, sequence: int) -> int:
        return await self._add(session, stream, [b"", job_id, sequence])

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        entries = await self._redis.entries_after(self._keys(session, stream)[0], max(position, 0))
        events: list[StoredEvent] = []
        for entry_id, fields in entries:
            at = int(entry_id.split(b"-")[0])
            if b"j" in fields:
                events.append(
                    StoredEvent(at, job_event=JobEventReference(fields[b"j"].decode(), int(fields[b"s"])))
                )
            else:
                events.append(StoredEvent(at, bytes(fields[b"d"])))
        return events

    async def position_of_job_event(
        self, session: str, stream: str, job_id: str, sequence: int
    ) -> int | None:
        found = await self._redis.field(self._keys(session, stream)[2], f"{job_id}:{sequence}")
        return int(found) if found is not None else None

    async def forget(self, session: str) -> None:
        streams = await self._redis.members(self._key(session, "streams"))
        keys = [key for stream in streams for key in self._keys(session, stream.decode())]
        await self._redis.delete(self._key(session, "streams"), *keys)

    async def forget_stream(self, session: str, stream: str) -> None:
        await self._redis.delete(*self._keys(session, stream))
        await self._redis.srem(self._key(session, "streams"), stream)

    async def aclose(self) -> None:
        await self._redis.aclose()
