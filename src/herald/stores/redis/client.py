"""The Redis client every store makes (`connect_redis`), its errors, and following a channel.

Commands lost with their connection are sent again on a new one (`connect_redis`), so a
Redis restart of a few seconds is a pause. Redis errors become `StoreError`, the original
chained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

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


def connect_redis(url: str) -> aioredis.Redis:
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
    return aioredis.Redis.from_pool(pool)


async def guarded(call: Awaitable[Any]) -> Any:
    """Await a Redis call; its errors become `StoreError`.

    redis-py types its answers as unions of every shape a reply could take; the callers
    here know the one shape each command gives (bytes: the clients never decode) and
    convert at once, so the answer is `Any` at this one boundary.
    """
    try:
        return await call
    except RedisError as exc:
        raise StoreError(f"Redis refused: {exc}") from exc


async def follow_channel(
    client: aioredis.Redis, channel: str, hear: HearMessage, subscribed: Subscribed | None = None
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
    client: aioredis.Redis,
    channel: str,
    hear: HearMessage,
    subscribed: Subscribed | None,
    stop: asyncio.Event,
) -> None:
    pubsub = client.pubsub()
    try:
        await guarded(pubsub.subscribe(channel))
        while not stop.is_set():
            message = await guarded(pubsub.get_message(timeout=HINT_WAIT_SECONDS))
            if message is None:
                continue
            if message.get("type") == "message":
                await hear(bytes(message["data"]))
            elif message.get("type") == "subscribe" and subscribed is not None:
                await subscribed()
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
