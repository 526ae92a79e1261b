"""Limits that hold under abuse: slow or silent sockets are timed out, connections and streams are
capped with a clear 503/429 and Retry-After, and the Host rules see what a proxy would see.

Raw sockets, because no well-behaved client sends half a request head.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.transports.http.conftest import (
    CANCELLED,
    GATES,
    HEADERS,
    INIT_PARAMS,
    STARTED,
    Running,
    build_server,
    event,
)
from tests.transports.http.test_modern_http import body as modern_body
from tests.transports.http.test_modern_http import headers as modern_headers

LIMITS = HttpConfig(
    header_timeout=0.5, body_timeout=0.5, keepalive_timeout=0.5, max_connections=8, max_streams_per_session=2
)
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
#: Long enough for a timeout of 0.5 s to fire under coverage on a busy machine, short of a hang.
ANSWER_WITHIN = 10.0


@pytest.fixture
async def limited() -> AsyncIterator[Running]:
    GATES.clear()
    STARTED.clear()
    server = build_server()
    async with serve_http(server, LIMITS) as (url, app), httpx.AsyncClient(timeout=10) as client:
        yield Running(server, url, client, app)
    for gate in GATES.values():
        gate.set()


async def unread_connection(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection that holds little of what it is sent: a 4 KiB receive buffer and a 4 KiB
    read limit. Loopback buffers otherwise grow to megabytes, and how long a flood takes
    to fill them is how fast the machine is, not what the server does."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: it sets the window
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    return await asyncio.open_connection(sock=sock, limit=4096)


def address(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    return host, int(port)


async def answer_to(url: str, sent: bytes) -> tuple[bytes, float]:
    """What the server says, until it closes the connection, after `sent`; and how long it took."""
    reader, writer = await asyncio.open_connection(*address(url))
    started = time.monotonic()
    writer.write(sent)
    await writer.drain()
    async with asyncio.timeout(ANSWER_WITHIN):
        said = await reader.read()
    writer.close()
    return said, time.monotonic() - started


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connects and says nothing
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # half a request head
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{",  # a body that stops
    ],
    ids=["silent", "half a head", "headers without the body"],
)
async def test_slow_clients_are_answered_408_and_closed(limited: Running, sent: bytes) -> None:
    said, after = await answer_to(limited.url, sent)
    assert said.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), said
    assert b"connection: close" in said
    assert after >= 0.5
    response = await limited.post(INITIALIZE)  # and the server serves others all along
    assert response.status_code == 200


async def test_an_idle_kept_alive_connection_is_closed(limited: Running) -> None:
    reader, writer = await asyncio.open_connection(*address(limited.url))
    body = orjson.dumps(INITIALIZE)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode() + body)
    async with asyncio.timeout(ANSWER_WITHIN):
        assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        await reader.read()  # the rest of the answer, then the close after the keep-alive timeout
    assert reader.at_eof()
    writer.close()


async def test_connections_past_the_cap_get_503_with_retry_after(limited: Running) -> None:
    held = [await asyncio.open_connection(*address(limited.url)) for _ in range(LIMITS.max_connections)]
    try:
        said, after = await answer_to(limited.url, b"")
        assert said.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), said
        assert b"retry-after: 1" in said
        assert after < 0.5, "refused at once, not left to time out"
    finally:
        for _, writer in held:
            writer.close()
    async with asyncio.timeout(ANSWER_WITHIN):  # the held ones go, and a client gets in again
        while (await limited.post(INITIALIZE)).status_code != 200:  # noqa: ASYNC110  # until the closes land
            await asyncio.sleep(0.05)


async def test_a_session_past_its_stream_cap_gets_429(limited: Running) -> None:
    session = await limited.initialize()
    headers = {**HEADERS, "mcp-session-id": session}

    def waiting(gate: str) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": gate,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {"gate": gate}},
        }

    calls = [
        asyncio.ensure_future(limited.client.post(limited.url, json=waiting(g), headers=headers))
        for g in "ab"
    ]
    async with asyncio.timeout(ANSWER_WITHIN):
        await event(STARTED, "a").wait()
        await event(STARTED, "b").wait()
    refused = await limited.client.post(limited.url, json=waiting("c"), headers=headers)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert "2 requests or streams open" in refused.json()["error"]["message"]
    event(GATES, "a").set()
    assert (await calls[0]).json()["result"]["content"][0]["text"] == "opened a"
    event(GATES, "c").set()
    again = await limited.client.post(limited.url, json=waiting("c"), headers=headers)
    assert again.json()["result"]["content"][0]["text"] == "opened c"
    event(GATES, "b").set()
    await calls[1]


# -- Host, Origin and headers as a proxy would read them ---------------------------------------------


async def raw_post(url: str, head: str) -> bytes:
    body = orjson.dumps(INITIALIZE)
    sent = head.format(length=len(body)).encode() + b"\r\n" + body
    said, _ = await answer_to(url, sent)
    return said


STANDARD = (
    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    "Content-Length: {length}\r\nConnection: close\r\n"
)


async def test_two_host_headers_are_refused(limited: Running) -> None:
    said = await raw_post(
        limited.url, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example.com\r\n" + STANDARD
    )
    assert said.startswith(b"HTTP/1.1 400"), said
    assert b"host header is sent more than once" in said


async def test_an_absolute_form_target_for_another_host_is_refused(limited: Running) -> None:
    said = await raw_post(
        limited.url, "POST http://evil.example.com/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + STANDARD
    )
    assert said.startswith(b"HTTP/1.1 403"), said
    local = await raw_post(
        limited.url, "POST http://127.0.0.1/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + STANDARD
    )
    assert local.startswith(b"HTTP/1.1 200"), local


async def test_a_host_with_userinfo_is_refused(limited: Running) -> None:
    said = await raw_post(
        limited.url, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1@evil.example.com\r\n" + STANDARD
    )
    assert said.startswith(b"HTTP/1.1 400"), said


async def test_host_names_are_not_case_sensitive_and_values_are_trimmed(limited: Running) -> None:
    _, port = address(limited.url)
    response = await limited.post(INITIALIZE, host=f"LOCALHOST:{port}")
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    ping = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    head = (  # white space around values is not part of them (RFC 9110 §5.5); httpx would not send it
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {session} \t\r\n"
        f"MCP-Protocol-Version: 2025-11-25 \r\n" + STANDARD.format(length=len(ping)) + "\r\n"
    )
    said, _ = await answer_to(limited.url, head.encode() + ping)
    assert said.startswith(b"HTTP/1.1 200"), said
    assert said.endswith(b'"result":{}}')


async def test_origin_null_is_refused_unless_listed(limited: Running) -> None:
    refused = await limited.post(INITIALIZE, origin="null")
    assert refused.status_code == 403
    config = HttpConfig(cors_origins=frozenset({"null"}))
    async with serve_http(build_server(), config) as (url, _), httpx.AsyncClient(timeout=10) as client:
        listed = await client.post(url, json=INITIALIZE, headers={**HEADERS, "origin": "null"})
        assert listed.status_code == 200


async def test_a_client_that_stops_reading_is_dropped() -> None:
    """A client that takes nothing of a stream for `write_timeout` seconds is disconnected:
    the socket's buffer and the response waiting on it go, and its request is cancelled."""
    config = HttpConfig(write_timeout=0.5)
    call = modern_body("tools/call", {"name": "flood", "arguments": {"gate": "unread"}})
    call["params"]["_meta"] = {**call["params"]["_meta"], "progressToken": 1}  # so it streams
    payload = orjson.dumps(call)
    head = {**HEADERS, **modern_headers("tools/call", "flood"), "content-length": str(len(payload))}
    async with serve_http(build_server(), config) as (url, _):
        host, port = address(url)
        head["host"] = f"{host}:{port}"
        reader, writer = await unread_connection(host, port)
        writer.write(b"POST /mcp HTTP/1.1\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in head.items()))
        writer.write(b"\r\n" + payload)
        await writer.drain()
        try:
            async with asyncio.timeout(ANSWER_WITHIN):  # the client reads nothing meanwhile
                await event(CANCELLED, "unread").wait()
            async with asyncio.timeout(ANSWER_WITHIN):  # the connection is gone: what is left ends
                while await reader.read(1 << 16):  # what the kernel holds, then the end
                    pass
        except ConnectionResetError:
            pass
        finally:
            writer.close()
