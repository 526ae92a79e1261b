"""A browser opening the server's URL gets a page about it; every MCP client's answer is unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from herald import Server
from herald.testing.http import serve_http
from tests.transports.http.conftest import Running

#: What Chrome and Firefox send when the user opens a URL.
BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
TITLE = "<script>alert(1)</script> & Gifts"


@pytest.fixture
async def titled() -> AsyncIterator[Running]:
    server = Server("page-test", "2.0.0", title=TITLE)
    async with serve_http(server) as (url, app), httpx.AsyncClient(timeout=10) as client:
        yield Running(server, url, client, app)


def root(running: Running) -> str:
    return running.url.removesuffix("/mcp") + "/"


@pytest.mark.parametrize("at", ["/", "/mcp"])
async def test_a_browser_is_told_what_the_server_is_and_how_to_connect(titled: Running, at: str) -> None:
    response = await titled.client.get(root(titled).removesuffix("/") + at, headers=BROWSER)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in response.headers["content-security-policy"]
    page = response.text
    assert "<code>page-test</code> 2.0.0" in page
    assert f"<code>{titled.url}</code>" in page
    assert "npx @modelcontextprotocol/inspector" in page
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt; &amp; Gifts</h1>" in page
    assert "<script>" not in page


async def test_the_page_keeps_the_host_rule(titled: Running) -> None:
    response = await titled.client.get(root(titled), headers={**BROWSER, "host": "evil.example"})
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("method", "at", "headers", "status"),
    [
        ("GET", "/", {"accept": "*/*"}, 404),
        ("GET", "/", {"accept": "application/json"}, 404),
        ("POST", "/", BROWSER, 404),
        ("GET", "/mcp", {"accept": "*/*"}, 400),
        ("GET", "/mcp", {"accept": "application/json"}, 406),
        ("GET", "/mcp", {"accept": "text/html, text/event-stream"}, 400),
        ("GET", "/mcp", {**BROWSER, "mcp-session-id": "unknown"}, 404),
        ("GET", "/mcp", {**BROWSER, "mcp-protocol-version": "2026-07-28"}, 405),
        ("DELETE", "/mcp", BROWSER, 400),
    ],
)
async def test_clients_are_answered_as_before(
    running: Running, method: str, at: str, headers: dict[str, str], status: int
) -> None:
    url = root(running).removesuffix("/") + at
    response = await running.client.request(method, url, headers=headers)
    assert response.status_code == status
    assert "text/html" not in response.headers["content-type"]


@pytest.mark.parametrize("accept", ["text/event-stream", "text/html, text/event-stream"])
async def test_an_event_stream_get_still_opens_the_stream(running: Running, accept: str) -> None:
    session_id = await running.initialize()
    headers = {"accept": accept, "mcp-session-id": session_id}
    async with running.client.stream("GET", running.url, headers=headers) as listening:
        assert listening.status_code == 200
        assert listening.headers["content-type"] == "text/event-stream"


async def test_a_route_of_the_apps_own_at_the_root_comes_first(running: Running) -> None:
    async def home(request: Request) -> PlainTextResponse:
        return PlainTextResponse("home")

    running.app.router.routes.append(Route("/", home))
    response = await running.client.get(root(running), headers=BROWSER)
    assert response.text == "home"
