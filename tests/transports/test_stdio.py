"""The stdio transport with a real server process and real pipes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

pytestmark = pytest.mark.slow  # stdio servers in processes of their own

SERVER = [sys.executable, str(Path(__file__).with_name("stdio_server.py"))]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def frame(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return frame(message)


def call(request_id: int, tool: str, **arguments: Any) -> bytes:
    return request(request_id, "tools/call", {"name": tool, "arguments": arguments})


HANDSHAKE = request(0, "initialize", INIT) + frame({"jsonrpc": "2.0", "method": "notifications/initialized"})


class Peer:
    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 10)
        assert line, "the server closed stdout early"
        message: dict[str, Any] = orjson.loads(line)
        return message


@asynccontextmanager
async def spawn(*extra: str) -> AsyncIterator[Peer]:
    process = await asyncio.create_subprocess_exec(
        *SERVER, *extra, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, limit=2**24
    )
    try:
        yield Peer(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_slow_tool_does_not_block_ping() -> None:
    async with spawn() as peer:
        await peer.send(HANDSHAKE + call(1, "pause", seconds=5) + request(2, "ping"))
        assert (await peer.receive())["id"] == 0
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_eof_finishes_in_flight_requests_then_exits() -> None:
    async with spawn() as peer:
        await peer.send(HANDSHAKE + call(1, "pause", seconds=0.2) + call(2, "echo", text="last"))
        assert peer.process.stdin is not None
        peer.process.stdin.close()
        assert peer.process.stdout is not None
        out = await asyncio.wait_for(peer.process.stdout.read(), 10)
        replies = {message["id"]: message for message in map(orjson.loads, out.splitlines())}
        assert replies[1]["result"]["content"][0]["text"] == "paused 0.2"
        assert replies[2]["result"]["content"][0]["text"] == "last"
        assert await asyncio.wait_for(peer.process.wait(), 10) == 0


async def test_sigterm_exits_cleanly_mid_request() -> None:
    async with spawn() as peer:
        await peer.send(HANDSHAKE + request(1, "ping"))
        assert (await peer.receive())["id"] == 0
        assert (await peer.receive())["id"] == 1  # the server is up and its handlers are installed
        await peer.send(call(2, "pause", seconds=60))
        peer.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(peer.process.wait(), 10) == 0


async def test_stdout_carries_protocol_only() -> None:
    async with spawn() as peer:
        await peer.send(HANDSHAKE + call(1, "noisy"))
        assert peer.process.stdin is not None
        peer.process.stdin.close()
        assert peer.process.stdout is not None
        assert peer.process.stderr is not None
        out, err = await asyncio.wait_for(
            asyncio.gather(peer.process.stdout.read(), peer.process.stderr.read()), 10
        )
        messages = [orjson.loads(line) for line in out.splitlines()]
        assert all(message["jsonrpc"] == "2.0" for message in messages)
        assert messages[-1]["result"]["content"][0]["text"] == "quiet"
        assert b"this line belongs on stderr" in err


async def test_malformed_and_oversize_lines_get_errors_and_serving_goes_on() -> None:
    async with spawn("2000") as peer:
        await peer.send(HANDSHAKE)
        assert (await peer.receive())["id"] == 0
        await peer.send(b"{this is not json\n")
        parse_error = await peer.receive()
        assert (parse_error["id"], parse_error["error"]["code"]) == (None, -32700)
        await peer.send(call(5, "echo", text="x" * 100_000))
        too_big = await peer.receive()
        assert (too_big["id"], too_big["error"]["code"]) == (5, -32600)
        assert "exceeds the limit of 2000 bytes" in too_big["error"]["message"]
        await peer.send(call(6, "echo", text="after"))
        assert (await peer.receive())["result"]["content"][0]["text"] == "after"


async def test_an_oversize_request_is_refused_with_its_id_wherever_the_id_is() -> None:
    params = {"name": "echo", "arguments": {"text": 'x"id":1}' * 1_000_000}}  # 8 MB, many reads
    id_first = frame({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    id_last = frame({"method": "tools/call", "params": params, "jsonrpc": "2.0", "id": "last"})
    unreadable = frame({"jsonrpc": "2.0", "params": params, "method": "tools/call", "id": 9, "x": 0})
    async with spawn("2000") as peer:
        await peer.send(HANDSHAKE)
        assert (await peer.receive())["id"] == 0
        await peer.send(id_first + id_last + unreadable + request(10, "ping"))
        replies = [await peer.receive() for _ in range(4)]
    assert [reply["id"] for reply in replies] == [7, "last", None, 10]
    for reply, sent in zip(replies[:3], (id_first, id_last, unreadable), strict=True):
        assert reply["error"]["data"] == {"size": len(sent) - 1, "limit": 2000}
        assert "--max-message-bytes" in reply["error"]["message"]


async def test_progress_arrives_before_the_result_and_in_order() -> None:
    async with spawn() as peer:
        params = {"name": "steps", "arguments": {"count": 500}, "_meta": {"progressToken": "p"}}
        await peer.send(HANDSHAKE + request(1, "tools/call", params))
        assert (await peer.receive())["id"] == 0
        values = []
        while "id" not in (message := await peer.receive()):
            values.append(message["params"]["progress"])
        assert message["id"] == 1
        assert values == list(range(1, 501))


def test_regular_file_as_stdin() -> None:
    with tempfile.TemporaryFile() as requests:
        requests.write(HANDSHAKE + call(1, "echo", text="from a file"))
        requests.seek(0)
        done = subprocess.run(SERVER, stdin=requests, capture_output=True, timeout=30, check=True)
    replies = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [0, 1]
    assert replies[1]["result"]["content"][0]["text"] == "from a file"


def test_regular_file_as_stdout(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with out.open("wb") as sink:
        subprocess.run(SERVER, input=HANDSHAKE + request(1, "ping"), stdout=sink, timeout=30, check=True)
    assert [orjson.loads(line)["id"] for line in out.read_bytes().splitlines()] == [0, 1]
    assert os.path.getsize(out) > 0
