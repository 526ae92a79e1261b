"""An error the server cannot address to a request still ends that request's wait.

Real servers throughout: the stdio test server and `giftgenius serve`, as processes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from herald.client import ServerError, StdioClient, WireEvent, connect_http
from tests.servers import giftgenius_http

pytestmark = pytest.mark.slow  # server processes

STDIO_SERVER = [sys.executable, str(Path(__file__).parents[1] / "transports" / "stdio_server.py"), "1000"]
GIFTGENIUS = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]


async def test_an_oversize_request_fails_with_the_servers_words() -> None:
    async with StdioClient.spawn([*GIFTGENIUS, "--max-message-bytes", "1000"]) as client:
        async with asyncio.timeout(20):
            with pytest.raises(ServerError) as caught:
                await client.call_tool("suggest_gifts", {"interests": ["x" * 5000]})
            assert (await client.request("ping")) == {}  # and the connection goes on
    assert caught.value.code == -32600
    assert caught.value.data["limit"] == 1000
    assert "--max-message-bytes" in caught.value.message
    assert client.unpaired_errors == []  # it came with its request's id


async def test_an_error_with_a_null_id_fails_every_request_in_flight() -> None:
    sent = asyncio.Event()

    def watch(event: WireEvent) -> None:
        if event.direction == "send" and b'"pause"' in event.data:
            sent.set()

    async with StdioClient.spawn(STDIO_SERVER, on_wire=watch) as client:
        slow = [asyncio.ensure_future(client.call_tool("pause", {"seconds": 60})) for _ in range(2)]
        await sent.wait()  # both requests are written (they share one loop turn)
        assert client.process.stdin is not None
        client.process.stdin.write(b"{not json\n")  # answered -32700 with a null id
        async with asyncio.timeout(20):
            outcomes = await asyncio.gather(*slow, return_exceptions=True)
        assert [reply["error"]["code"] for reply in client.unpaired_errors] == [-32700]
        client.process.kill()  # the pauses would hold the server's orderly exit for a minute
    for outcome in outcomes:
        assert isinstance(outcome, ServerError)
        assert outcome.code == -32700


async def test_an_unpaired_error_with_nothing_in_flight_is_kept() -> None:
    answered = asyncio.Event()

    def watch(event: WireEvent) -> None:
        if event.direction == "receive" and b"-32700" in event.data:
            answered.set()

    async with StdioClient.spawn(STDIO_SERVER, on_wire=watch) as client:
        assert client.process.stdin is not None
        client.process.stdin.write(b"{not json\n")
        async with asyncio.timeout(20):
            await answered.wait()
            assert (await client.request("ping")) == {}  # a request after it is not failed by it
    assert [reply["id"] for reply in client.unpaired_errors] == [None]


async def test_http_413_fails_the_request_with_its_status(tmp_path: Path) -> None:
    with giftgenius_http("memory", "--max-message-bytes", "1000") as served:
        async with connect_http(served.url, listen=False) as client, asyncio.timeout(20):
            with pytest.raises(ServerError) as caught:
                await client.call_tool("suggest_gifts", {"interests": ["x" * 5000]})
    assert caught.value.http_status == 413
    assert "limit is 1000" in caught.value.message
