"""Redirects between the client and its endpoint: followed within the origin when they keep the
method (a server mounted under another path, a slash added or taken away), refused otherwise.

A real herald server in uvicorn, behind an ASGI layer that answers some paths with a
redirect, as a proxy or a mount point would. Every kind of request the client makes (the
POSTs, the handshake era's GET stream, the DELETE that ends a session) goes through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from herald.client import ServerError, connect_http
from tests.client.conftest import HttpServer

LIMIT = 30


class Redirector:
    """Answers a request for a path in `moves` with its status and Location; passes the rest on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.moves: dict[str, tuple[int, str]] = {}
        #: Method and path of every request that reached the app behind it.
        self.passed: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        move = self.moves.get(scope["path"]) if scope["type"] == "http" else None
        if move is None:
            if scope["type"] == "http":
                self.passed.append(f"{scope['method']} {scope['path']}")
            await self.app(scope, receive, send)
            return
        status, location = move
        headers = [(b"location", location.encode()), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
async def redirected(tmp_path: Path) -> AsyncIterator[tuple[HttpServer, Redirector]]:
    wrapped: list[Redirector] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        wrapped.append(Redirector(app))
        return wrapped[0]

    served = HttpServer(tmp_path / "jobs.sqlite3", wrap=wrap)
    await served.start()
    try:
        yield served, wrapped[0]
    finally:
        await served.stop()


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
async def test_a_redirect_within_the_origin_that_keeps_the_method_is_followed(
    redirected: tuple[HttpServer, Redirector], status: int, modern: bool
) -> None:
    served, redirector = redirected
    base = served.url.removesuffix("/mcp")
    redirector.moves["/old/mcp"] = (status, "/mcp")
    async with asyncio.timeout(LIMIT):
        async with connect_http(f"{base}/old/mcp", modern=modern) as client:
            tools = await client.request("tools/list")
            assert {tool["name"] for tool in tools["tools"]} >= {"count", "gated"}
            if not modern:
                await client.stream_open.wait()  # the GET stream, redirected as well
        assert client.url == f"{base}/old/mcp"
    expected = {"POST /mcp"} | ({"GET /mcp", "DELETE /mcp"} if not modern else set())
    assert set(redirector.passed) == expected


@pytest.mark.parametrize(
    ("status", "location"),
    [
        (302, "/mcp"),  # httpx would turn the POST into a GET without the message
        (303, "/mcp"),
        (307, "http://localhost:{port}/mcp"),  # the same server under another origin
        (307, "/old/mcp"),  # a loop
    ],
)
async def test_any_other_redirect_is_said_and_not_followed(
    redirected: tuple[HttpServer, Redirector], status: int, location: str
) -> None:
    served, redirector = redirected
    base = served.url.removesuffix("/mcp")
    location = location.format(port=served.port)
    redirector.moves["/old/mcp"] = (status, location)
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ServerError, match="; not followed") as refused:
            async with connect_http(f"{base}/old/mcp"):
                pass
    assert refused.value.http_status == status
    assert "redirected to " in refused.value.message
    assert redirector.passed == [], "nothing reached the server"
