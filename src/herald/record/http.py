"""`herald record --upstream URL --port P`: a Streamable HTTP proxy with a recorder in it.

The client talks to the proxy as it would to the server: every request goes upstream
with its method, path, query, headers and body unchanged (a body that comes in pieces
passed on as they arrive, never held whole), and the answer comes back with its status
and headers, its body passed on chunk by chunk as it arrives, so an SSE stream stays
live and `Last-Event-ID`, `Mcp-Session-Id` and `MCP-Protocol-Version` pass through both
ways. What differs is only what HTTP requires of a proxy: hop-by-hop headers stay on
their hop, the Host header names the upstream, and answers are asked for without
compression (so what is recorded is what the client reads). A client that leaves
closes its upstream request; an upstream that cannot be reached is answered with 502
and a line saying so. The recording itself is `herald.wire.asgi.RecordingMiddleware`.

The upstream side is aiohttp's client: a proxy puts its own client's cost on every
request, and httpx spent milliseconds a request here, which quadrupled a local
server's latency and cut its concurrent throughput twentyfold (bench/record_overhead.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, MutableMapping
from typing import Any, Final
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from herald.wire.asgi import Receive, RecordingMiddleware, Scope, Send, request_target
from herald.wire.format import recorder_name
from herald.wire.writer import Flushing, MessageLog

#: Headers of one hop (RFC 9110 §7.6.1).
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_NOT_FORWARDED: Final = HOP_BY_HOP | {"host", "accept-encoding", "content-length"}
#: What aiohttp would add on its own: a transparent proxy sends only what its client sent.
_NOT_ADDED: Final = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
#: Connecting upstream may take this long; reading never times out (event streams idle by design).
TIMEOUT: Final = aiohttp.ClientTimeout(total=None, connect=30.0, sock_read=None)


class Upstream:
    """The ASGI app that passes each request on to the server at `origin` (scheme://host:port)."""

    def __init__(self, origin: str) -> None:
        self.origin = origin.rstrip("/")
        self._http: aiohttp.ClientSession | None = None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None:  # made in the serving loop, on first use
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
            self._http = aiohttp.ClientSession(
                connector=connector,
                timeout=TIMEOUT,
                auto_decompress=False,
                skip_auto_headers=_NOT_ADDED,
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._http

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = _Request(receive)
        body = await request.body()
        if request.left:
            return  # the client left before its request was whole
        url = URL(self.origin + request_target(scope), encoded=True)
        # aiohttp counts a body it is given whole; one that streams keeps the client's length.
        dropped = _NOT_FORWARDED if isinstance(body, bytes) else _NOT_FORWARDED - {"content-length"}
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() not in dropped
        ]
        headers.append(("Accept-Encoding", "identity"))
        try:
            response = await self._client().request(
                scope["method"], url, headers=headers, data=body, allow_redirects=False
            )
        except (aiohttp.ClientError, OSError) as failed:
            if not request.left:
                await _unreachable(send, self.origin, failed)
            return
        try:
            async with asyncio.TaskGroup() as tasks:
                relay = tasks.create_task(_relay(response, send))
                watcher = tasks.create_task(request.leaving())
                watcher.add_done_callback(lambda _: relay.cancel())
                relay.add_done_callback(lambda _: watcher.cancel())
        except* (aiohttp.ClientError, OSError):
            pass  # the upstream or the client went away mid-answer: the stream just ends
        finally:
            if response.content.at_eof():
                response.release()  # whole: the connection goes back to the pool
            else:
                response.close()  # cut short: the upstream must see its request end


class _ClientLeft(Exception):
    """The client left while its body was still coming: the upstream request is cut short."""


class _Request:
    """The client's side of one exchange: its body, then its leaving.

    A body that comes in one piece (every MCP message but the largest) is passed on as
    bytes; one that comes in pieces goes upstream as they arrive, so the proxy never
    holds it whole, and the client's Content-Length goes with it. A client that leaves
    mid-body ends the upstream request. Once the body is read, `leaving()` waits for the
    client to go.
    """

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._read = asyncio.Event()
        self.left = False

    async def body(self) -> bytes | AsyncIterator[bytes]:
        """The body whole, or a stream of its pieces; empty if the client has left."""
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.left = True
            return b""
        first: bytes = message.get("body", b"")
        if message.get("more_body", False):
            return self._streamed(first)
        self._read.set()
        return first

    async def _streamed(self, first: bytes) -> AsyncIterator[bytes]:
        try:
            yield first
            while True:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    self.left = True
                    raise _ClientLeft
                yield message.get("body", b"")
                if not message.get("more_body", False):
                    return
        finally:
            self._read.set()

    async def leaving(self) -> None:
        """Returns once the client has left (watching starts when its body is read)."""
        await self._read.wait()
        while not self.left:
            self.left = (await self._receive())["type"] == "http.disconnect"


async def _relay(response: aiohttp.ClientResponse, send: Send) -> None:
    headers = [
        (name, value)
        for name, value in response.raw_headers
        if name.decode("latin-1").lower() not in HOP_BY_HOP
    ]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    async for chunk in response.content.iter_any():
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _unreachable(send: Send, origin: str, failed: Exception) -> None:
    text = (
        f"herald record: the upstream server {origin} cannot be reached ({type(failed).__name__}: {failed})\n"
    )
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 502, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RecordingProxy:
    """The whole proxy as one ASGI app: the recorder around `Upstream`, with a lifespan that
    starts the log and closes it (and the upstream client) when the server stops."""

    def __init__(self, upstream_url: str, log: MessageLog) -> None:
        self.upstream_url = upstream_url
        self.log = log
        self.upstream = Upstream(origin_of(upstream_url))
        self.recorded = RecordingMiddleware(self.upstream, log)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        else:
            await self.recorded(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message: MutableMapping[str, Any] = await receive()
        assert message["type"] == "lifespan.startup"
        self.log.start("http", recorder_name(), self.upstream_url)
        async with Flushing(self.log):
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        with contextlib.suppress(Exception):
            await self.upstream.aclose()
        self.log.close()
        await send({"type": "lifespan.shutdown.complete"})


def origin_of(url: str) -> str:
    """scheme://host[:port] of `url`, which must be an http(s) URL; ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    return f"{parts.scheme}://{parts.netloc}"
