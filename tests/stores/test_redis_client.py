"""Redis errors leave the stores' client as StoreError, and its reads answer bytes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis.exceptions import ResponseError

from herald.stores.errors import StoreError
from herald.stores.redis.client import connect_redis, refused_because
from tests.redis_server import redis_server

pytestmark = pytest.mark.slow  # a redis-server of its own


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


async def test_a_refused_command_is_a_store_error_with_the_reply_behind_it(redis_url: str) -> None:
    client = connect_redis(redis_url)
    try:
        await client.set("client:text", b"plain")
        with pytest.raises(StoreError, match="WRONGTYPE") as caught:
            await client.members("client:text")  # SMEMBERS of a string
        assert isinstance(caught.value.__cause__, ResponseError)
        assert refused_because(caught.value, "WRONGTYPE")
        assert not refused_because(caught.value, "NOGROUP")

        with pytest.raises(StoreError, match="NOGROUP") as missing:
            await client.xreadgroup("nobody", "me", {"client:no-stream": ">"})
        assert refused_because(missing.value, "NOGROUP")
    finally:
        await client.aclose()


async def test_a_pipeline_raises_store_errors_or_answers_them(redis_url: str) -> None:
    client = connect_redis(redis_url)
    try:
        await client.set("client:word", b"w")
        async with client.pipeline(transaction=False) as both:
            both.get("client:word")
            both.hget("client:word", "field")  # HGET of a string
            answers = await both.execute(raise_on_error=False)
        assert answers[0] == b"w"
        assert isinstance(answers[1], StoreError)
        assert refused_because(answers[1], "WRONGTYPE")

        async with client.pipeline(transaction=False) as unknown:
            unknown.evalsha("0" * 40, 0)  # a script Redis does not have
            (missing,) = await unknown.execute(raise_on_error=False)
        assert isinstance(missing, StoreError)
        assert refused_because(missing, "NOSCRIPT")

        async with client.pipeline(transaction=False) as failing:
            failing.hget("client:word", "field")
            with pytest.raises(StoreError, match="WRONGTYPE"):
                await failing.execute()
    finally:
        await client.aclose()


async def test_reads_answer_bytes_as_stored(redis_url: str) -> None:
    client = connect_redis(redis_url)
    try:
        assert await client.value("client:absent") is None
        await client.hset("client:hash", mapping={"a": b"1", "b": b"\xff"})
        assert await client.field("client:hash", "b") == b"\xff"
        assert await client.fields("client:hash", ["a", "none"]) == [b"1", None]
        await client.sadd("client:set", "x", "y")
        assert await client.members("client:set") == {b"x", b"y"}
        await client.zadd("client:ranking", {"low": 1.0, "high": 2.5})
        assert await client.ranked("client:ranking") == [b"low", b"high"]
        assert await client.scored_between("client:ranking", 2, "+inf") == [(b"high", 2.5)]
        await client.xadd("client:stream", {"k": b"v1"}, id="1-0")
        await client.xadd("client:stream", {"k": b"v2"}, id="2-0")
        assert await client.entries_after("client:stream", 1) == [(b"2-0", {b"k": b"v2"})]
    finally:
        await client.aclose()
