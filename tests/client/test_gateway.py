"""A balancer in front of the server: its own 502/503/504 pages mean "no server now", not an answer.

While replicas restart, a gateway answers with an HTML page of its own. The client takes
that as a lost connection and tries again; a JSON-RPC error that comes with the same
status is the server's own answer and is raised as such.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from herald.client import ConnectionLost, ServerError, connect_http
from tests.client.conftest import HttpServer

LIMIT = 30
PAGE = b"<html><body><h1>503 Service Unavailable</h1>No server is available.</body></html>"


class Gateway:
    """Passes requests to the app, or answers each with `status` and `body` while `down`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.down = False
        self.status = 503
        self.body = PAGE
        self.content_type = b"text/html"
        self.refused: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.down:
            await self.app(scope, receive, send)
            return
        self.refused.append(scope["method"])
        headers = [(b"content-type", self.content_type), (b"content-length", str(len(self.body)).encode())]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@pytest.fixture
async def gateway(tmp_path: Path) -> Any:
    wrapped: list[Gateway] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        wrapped.append(Gateway(app))
        return wrapped[0]

    served = HttpServer(tmp_path / "jobs.sqlite3", wrap=wrap)
    await served.start()
    try:
        yield served.url, wrapped[0]
    finally:
        await served.stop()


@pytest.mark.parametrize("status", [502, 503, 504])
@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
async def test_a_gateway_page_is_a_lost_connection_that_a_retry_gets_past(
    gateway: tuple[str, Gateway], status: int, modern: bool
) -> None:
    url, balancer = gateway
    balancer.status = status
    retries: list[str] = []
    async with (
        asyncio.timeout(LIMIT),
        connect_http(url, modern=modern, listen=False, reconnect_timeout=20) as client,
    ):
        balancer.down = True
        with pytest.raises(ConnectionLost, match=f"HTTP {status}"):
            await client.request("ping")

        came_back = asyncio.Event()

        def retried(failures: int, lost: ConnectionLost) -> None:
            retries.append(str(lost))
            if failures == 2:
                balancer.down = False  # the balancer finds a server again
                came_back.set()

        client.on_retry = retried
        assert await client.request_again("tools/call", {"name": "count", "arguments": {"to": 1}})
        assert came_back.is_set()
    assert len(retries) == 2
    assert all(f"HTTP {status}" in line and "not a JSON-RPC message" in line for line in retries)


async def test_a_json_rpc_error_with_503_is_the_servers_answer(gateway: tuple[str, Gateway]) -> None:
    url, balancer = gateway
    async with asyncio.timeout(LIMIT), connect_http(url, listen=False, reconnect_timeout=5) as client:
        balancer.down = True
        balancer.content_type = b"application/json"
        balancer.body = orjson.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "the server is stopping"}}
        )
        with pytest.raises(ServerError) as caught:
            await client.request_again("ping")
    assert not isinstance(caught.value, ConnectionLost)
    assert caught.value.message == "the server is stopping"
    assert caught.value.http_status == 503
    assert balancer.refused == ["POST", "DELETE"]  # raised at once, never repeated; then the close
