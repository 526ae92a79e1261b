"""The page a person gets who opens the server's URL in a browser.

Pasting the endpoint's URL into a browser is the first thing many people try, and the
endpoint would answer with a JSON-RPC error about a missing session. Instead they get a
few lines saying what the server is and how to connect to it. Only a request that
names text/html, does not name text/event-stream and carries no `Mcp-*` header gets the
page: that is a browser navigating. MCP clients ask for an event stream or JSON (or
`*/*`), and send their session and version headers, so what they are answered does not
change.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from starlette.datastructures import URL
from starlette.types import ASGIApp

from herald.protocol.http import HTTPError
from herald.server.app import Server
from herald.transports.http.asgi import Receive, Scope, Send, request_headers

#: The endpoint's URL answers browsers and clients differently; no script, style inline only.
PAGE_HEADERS = [
    (b"vary", b"accept"),
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'"),
]

_PAGE = """<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem}}\
code{{overflow-wrap:anywhere}}</style>
<h1>{title}</h1>
<p><code>{name}</code> {version} is a Model Context Protocol (MCP) server. It speaks
Streamable HTTP at <code>{url}</code>; this page is for people, MCP clients get JSON-RPC there.</p>
<h2>Connect</h2>
<ul>
<li>MCP Inspector: run <code>npx @modelcontextprotocol/inspector</code>, choose the
Streamable HTTP transport and enter <code>{url}</code>.</li>
<li>An MCP host (Claude, VS Code, Cursor, ...): add a custom connector or remote MCP server
with the URL <code>{url}</code>.</li>
</ul>
"""


def wants_page(headers: Mapping[str, str]) -> bool:
    """Whether a GET comes from a browser navigating rather than from an MCP client.

    Media types are compared as named, not through wildcards: a browser's Accept also
    lists `*/*`, and so may a client's; only the browser names text/html.
    """
    if any(name.startswith("mcp-") for name in headers):
        return False
    named = {part.split(";", 1)[0].strip().lower() for part in headers.get("accept", "").split(",")}
    return "text/html" in named and "text/event-stream" not in named


def render_page(server: Server, url: str) -> bytes:
    """The page, with everything that comes from the server's definition or the request escaped."""
    return _PAGE.format(
        title=escape(server.title or server.name),
        name=escape(server.name),
        version=escape(server.version),
        url=escape(url),
    ).encode()


def endpoint_url(scope: Scope, path: str) -> str:
    """The endpoint's URL as this request reached the server: its scheme, Host and root path."""
    return str(URL(scope={**scope, "path": scope.get("root_path", "") + path, "query_string": b""}))


class FrontDoor:
    """`/`, where the app has no route of its own there: the page for a browser, 404 otherwise.

    `endpoint` serves the page, so it is refused by the same Host/Origin rule as the
    endpoint's own URL; everything else is answered by `not_found`, as before.
    """

    def __init__(self, endpoint: ASGIApp, not_found: ASGIApp) -> None:
        self.endpoint = endpoint
        self.not_found = not_found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            page = scope["method"] == "GET" and wants_page(request_headers(scope))
        except HTTPError:
            page = True  # the endpoint answers what is wrong with the request
        if page:
            await self.endpoint(scope, receive, send)
        else:
            await self.not_found(scope, receive, send)
