"""The Redis client every store makes (`connect_redis`), its errors, and following a channel.

Commands lost with their connection are sent again on a new one (`connect_redis`), so a
Redis restart of a few seconds is a pause. Redis errors become `StoreError`, the original
chained, here and nowhere else: `StoreRedis` maps them where every command and every
pipeline goes out, so the stores never see a redis-py error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Final, cast

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import NoScriptError, RedisError, ResponseError

from herald.jobs.store import Subscribed
from herald.stores.errors import StoreError
from herald.stores.sessions import HearMessage

#: How long one read of the hint subscription waits: also how long it takes to stop.
HINT_WAIT_SECONDS: Final = 0.5

#: Connections one store opens to Redis at most. A burst of calls beyond that (100 jobs
#: starting at once) waits for a free connection, up to `POOL_WAIT_SECONDS`, instead of
#: failing, so each replica and worker costs Redis a bounded number of clients.
POOL_CONNECTIONS: Final = 32
POOL_WAIT_SECONDS: Final = 20.0


#: A command that loses its connection is sent again on a new one, after pauses that double
#: from 0.1 s to 1 s, this many times: about 7.5 s in all. A Redis restart or a failover
#: of a few seconds is then a pause, not an error, and a pooled connection the restart
#: closed is replaced at its next use instead of failing it.
RECONNECT_TRIES: Final = 10
RECONNECT_FIRST_PAUSE: Final = 0.05
RECONNECT_LONGEST_PAUSE: Final = 1.0


def refused(exc: RedisError) -> StoreError:
    """The `StoreError` a Redis error becomes (raise it `from` the original)."""
    return StoreError(f"Redis refused: {exc}")


def refused_because(error: StoreError, reply: str) -> bool:
    """Whether Redis refused with the error reply `reply` (NOGROUP, BUSYGROUP, NOSCRIPT…).

    redis-py keeps the reply's code at the start of its message, except for the codes it
    has a class of its own for (NOSCRIPT), which it moves to `status_code`.
    """
    cause = error.__cause__
    if not isinstance(cause, ResponseError):
        return False
    return getattr(cause, "status_code", None) == reply or str(cause).split(" ", 1)[0] == reply


def _answered(answer: Any) -> Any:
    """A pipeline's answer, a command's error reply as the `StoreError` it becomes."""
    if not isinstance(answer, RedisError):
        return answer
    error = refused(answer)
    error.__cause__ = answer
    return error


class StorePipeline(Pipeline):
    """A pipeline of `StoreRedis`: what its `execute` raises is a `StoreError`.

    With `raise_on_error=False` a command's own error reply stays in the answers, as the
    `StoreError` it becomes, for the caller to look at (`refused_because`).
    """

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            answers = await super().execute(raise_on_error)
        except RedisError as exc:
            raise refused(exc) from exc
        return [_answered(answer) for answer in answers]


class StoreRedis(aioredis.Redis):
    """redis-py's client whose errors leave it as `StoreError`: every command passes
    `execute_command`, and every pipeline is a `StorePipeline`.

    NOSCRIPT alone is let through, to the script objects (`register_script`) that send
    commands through this client: they answer it by loading their script and sending
    the call again.
    """

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except NoScriptError:
            raise
        except RedisError as exc:
            raise refused(exc) from exc

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> StorePipeline:
        return StorePipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)

    # -- reads, typed as this client answers them --------------------------------------------
    # redis-py types a reply as every shape it could take (str too, for a client that
    # decodes); this one never decodes, so each read below has its one shape.

    async def value(self, key: str) -> bytes | None:
        """GET."""
        return cast("bytes | None", await self.get(key))

    async def field(self, key: str, name: str) -> bytes | None:
        """HGET."""
        return cast("bytes | None", await self.hget(key, name))

    async def fields(self, key: str, names: list[str]) -> list[bytes | None]:
        """HMGET."""
        return cast("list[bytes | None]", await self.hmget(key, names))

    async def members(self, key: str) -> set[bytes]:
        """SMEMBERS."""
        return cast("set[bytes]", await self.smembers(key))

    async def ranked(self, key: str) -> list[bytes]:
        """ZRANGE key 0 -1: every member, lowest score first."""
        return cast("list[bytes]", await self.zrange(key, 0, -1))

    async def scored_between(
        self, key: str, low: float | str, high: float | str
    ) -> list[tuple[bytes, float]]:
        """ZRANGEBYSCORE … WITHSCORES."""
        return cast("list[tuple[bytes, float]]", await self.zrangebyscore(key, low, high, withscores=True))

    async def entries_after(self, key: str, after: int) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """XRANGE from the entry after `after` (ids are `N-0`) to the end."""
        return cast("list[tuple[bytes, dict[bytes, bytes]]]", await self.xrange(key, f"{after + 1}-0", "+"))


def connect_redis(url: str) -> StoreRedis:
    """A client for `url` whose connections are pooled and bounded (`POOL_CONNECTIONS`), and
    re-made when Redis drops them (`RECONNECT_TRIES`).

    A command sent again may have run once already (its answer was what got lost); every
    write here is safe to repeat: a job's changes are compare-and-set on its sequence, its
    creation recognises its own earlier try, and an index or queue entry written twice
    names the same job.
    """
    retry = Retry(ExponentialBackoff(RECONNECT_LONGEST_PAUSE, RECONNECT_FIRST_PAUSE), RECONNECT_TRIES)
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=POOL_CONNECTIONS, timeout=POOL_WAIT_SECONDS, retry=retry
    )
    client = StoreRedis(connection_pool=pool)
    client.auto_close_connection_pool = True  # the client owns its pool (as `from_pool` does)
    return client


async def _answer(call: Awaitable[Any]) -> Any:
    """Await a pub/sub call (pub/sub has a connection of its own, outside `StoreRedis`)."""
    try:
        return await call
    except RedisError as exc:
        raise refused(exc) from exc


async def follow_channel(
    client: StoreRedis, channel: str, hear: HearMessage, subscribed: Subscribed | None = None
) -> None:
    """Hear every message published on `channel` from now on, until cancelled.

    A lost connection is made again and the channel subscribed again (the client's
    retries); messages published meanwhile are lost, which is why `subscribed` is called
    each time Redis confirms the subscription: what must not be lost is in a store, and
    the caller reads it then.

    The subscription is read by a task of its own that is never cancelled: a redis-py
    read cancelled half-way can leave its connection unable to close, which held up
    shutdown. Cancelling this call tells the reader to stop, and it does within
    `HINT_WAIT_SECONDS`, closing its subscription cleanly.
    """
    stop = asyncio.Event()
    reader = asyncio.get_running_loop().create_task(_read_channel(client, channel, hear, subscribed, stop))
    try:
        await asyncio.shield(reader)
    finally:
        stop.set()
        # Owned here: it ends before this call does (cancelled, as a last resort, if a
        # read outlives its own timeout several times over).
        if not (await asyncio.wait({reader}, timeout=4 * HINT_WAIT_SECONDS))[0]:
            reader.cancel()
            await asyncio.wait({reader}, timeout=4 * HINT_WAIT_SECONDS)


async def _read_channel(
    client: StoreRedis,
    channel: str,
    hear: HearMessage,
    subscribed: Subscribed | None,
    stop: asyncio.Event,
) -> None:
    pubsub = client.pubsub()
    try:
        await _answer(pubsub.subscribe(channel))
        while not stop.is_set():
            message = await _answer(pubsub.get_message(timeout=HINT_WAIT_SECONDS))
            if message is None:
                continue
            if message.get("type") == "message":
                await hear(bytes(message["data"]))
            elif message.get("type") == "subscribe" and subscribed is not None:
                await subscribed()
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
