"""`RedisSessionStore`: the sessions, the `requestState` key and the messages replicas share."""

from __future__ import annotations

import secrets
from typing import Any

from herald.stores.errors import StoreError
from herald.stores.redis.client import StoreRedis, connect_redis, follow_channel
from herald.stores.sessions import HearMessage, SessionRecord


class RedisSessionStore:
    """A `SessionStore` on Redis: each session a hash under `{s:ID}` that `PEXPIRE` ends.

    Loading a session and extending its life is one transaction, so a session that
    expires in between is found by neither or both; Redis forgets the expired ones itself.
    The `requestState` key is one string (`SET NX`: the first replica's wins), and
    messages between replicas go over pub/sub, a hint at most once.
    """

    def __init__(self, client: StoreRedis, *, prefix: str = "herald") -> None:
        self._redis = client
        self._prefix = prefix

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisSessionStore:
        return cls(connect_redis(url), **options)

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:{{s:{session_id}}}:session"

    async def save(self, record: SessionRecord, ttl: float) -> None:
        key = self._key(record.session_id)
        async with self._redis.pipeline(transaction=True) as save:
            save.hset(key, mapping={"record": record.to_json()})
            save.pexpire(key, max(int(ttl * 1000), 1))
            await save.execute()

    async def load(self, session_id: str, ttl: float | None) -> SessionRecord | None:
        key = self._key(session_id)
        async with self._redis.pipeline(transaction=True) as load:
            load.hget(key, "record")
            if ttl is not None:
                load.pexpire(key, max(int(ttl * 1000), 1))
            found = (await load.execute())[0]
        return SessionRecord.from_json(session_id, bytes(found)) if found is not None else None

    async def delete(self, session_id: str) -> bool:
        return bool(await self._redis.delete(self._key(session_id)))

    async def shared_key(self) -> bytes:
        key = f"{self._prefix}:request-state-key"
        await self._redis.set(key, secrets.token_bytes(32), nx=True)
        found = await self._redis.value(key)
        if found is None:  # set just above: Redis lost it (a flush, an eviction) between the two
            raise StoreError("Redis lost the shared request-state key as it was made; try again")
        return found

    async def publish(self, message: bytes) -> None:
        await self._redis.publish(f"{self._prefix}:replicas", message)

    async def follow(self, hear: HearMessage) -> None:
        await follow_channel(self._redis, f"{self._prefix}:replicas", hear)

    async def aclose(self) -> None:
        await self._redis.aclose()
