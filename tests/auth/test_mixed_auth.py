"""Tools that need no token beside tools that do, and what a tool knows of who calls it.

A real authorization server (`issuer.py`) and a herald server on Streamable HTTP in the
test's loop: a caller without a token discovers the server and calls the public tool;
a protected tool answers it with ChatGPT's `mcp/www_authenticate` challenge; a signed-in
caller's tool sees the verified claims and the token, and can ask for more scopes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from herald import Context, Server, ToolUI, Widget
from herald.auth.config import AuthConfig
from herald.protocol.errors import AuthRequired
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.auth.issuer import Issuer
from tests.messages import INITIALIZE, INITIALIZED, POST_HEADERS

AUDIENCE = "https://mixed.example/mcp"
USE, EXPORT = "demo:use", "demo:export"


def build() -> Server:
    server = Server("mixed")

    @server.tool(auth=False)
    async def weather(city: str, ctx: Context) -> str:
        """Public: anyone may ask."""
        who = ctx.principal.subject if ctx.principal is not None else "a guest"
        return f"sunny in {city}, {who}"

    @server.tool
    async def whoami(ctx: Context) -> dict[str, Any]:
        """Protected: the caller's verified claims and token."""
        assert ctx.principal is not None
        return {"email": ctx.principal.claims.get("email"), "token_length": len(ctx.principal.token)}

    @server.tool
    async def export(ctx: Context) -> str:
        """Needs a scope the caller may not have granted yet: asks for it."""
        assert ctx.principal is not None
        if EXPORT not in ctx.principal.scopes:
            raise AuthRequired("Exporting needs your consent to the export scope.", scopes=[EXPORT])
        return "exported"

    @server.tool(auth=False, ui=ToolUI(Widget("forecast", html="<!doctype html><title>f</title>")))
    async def forecast(city: str) -> str:
        """Public, with a widget a guest's host must be able to read."""
        return f"rain in {city}"

    @server.resource("demo://private")
    async def private() -> str:
        return "for signed-in callers"

    return server


@dataclass
class Served:
    issuer: Issuer
    url: str

    def token(self, scopes: set[str], **claims: Any) -> str:
        return self.issuer.mint(audience=AUDIENCE, subject="alice", scopes=scopes, **claims)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    issuer = Issuer()
    async with issuer.serving():
        auth = AuthConfig(issuer=issuer.url, audience=AUDIENCE, required_scopes=frozenset({USE}))
        async with serve_http(build(), HttpConfig(auth=auth)) as (url, _):
            yield Served(issuer, url)


async def exchange(
    url: str, messages: list[dict[str, Any]], token: str | None = None
) -> list[httpx.Response]:
    """POST each message in turn, as one session (the first is `initialize`)."""
    headers = {**POST_HEADERS} | ({"authorization": f"Bearer {token}"} if token else {})
    answers: list[httpx.Response] = []
    async with httpx.AsyncClient(timeout=30) as http:
        for message in messages:
            answer = await http.post(url, json=message, headers=headers)
            answers.append(answer)
            if "mcp-session-id" in answer.headers:
                headers["mcp-session-id"] = answer.headers["mcp-session-id"]
                headers["mcp-protocol-version"] = "2025-11-25"
    return answers


def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def result_of(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    body = answer.json() if answer.headers["content-type"].startswith("application/json") else None
    if body is None:  # an event stream: the data line of the response
        data = [
            line[5:].strip()
            for line in answer.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
        body = json.loads(data[-1])
    result: dict[str, Any] = body["result"]
    return result


async def test_a_guest_discovers_the_server_and_calls_the_public_tool(served: Served) -> None:
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    answers = await exchange(served.url, [INITIALIZE, INITIALIZED, listing, call(3, "weather", city="Oslo")])
    tools = {tool["name"]: tool for tool in result_of(answers[2])["tools"]}
    assert tools["weather"]["securitySchemes"] == [{"type": "noauth"}, {"type": "oauth2", "scopes": [USE]}]
    assert tools["whoami"]["securitySchemes"] == [{"type": "oauth2", "scopes": [USE]}]
    assert result_of(answers[3])["content"][0]["text"] == "sunny in Oslo, a guest"


async def test_a_protected_tool_asks_a_guest_to_sign_in(served: Served) -> None:
    answers = await exchange(served.url, [INITIALIZE, INITIALIZED, call(2, "whoami")])
    result = result_of(answers[2])
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Tool 'whoami' needs you to sign in first."
    [challenge] = result["_meta"]["mcp/www_authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'scope="{USE}"' in challenge
    assert "resource_metadata=" in challenge


async def test_a_guest_may_not_read_what_needs_a_token(served: Served) -> None:
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "demo://private"}}
    answers = await exchange(served.url, [INITIALIZE, INITIALIZED, read])
    assert answers[2].status_code == 401
    assert "resources/read needs an access token" in answers[2].json()["error"]["message"]
    assert answers[2].headers["www-authenticate"].startswith("Bearer ")


async def test_a_tool_sees_the_callers_claims_and_token(served: Served) -> None:
    token = served.token({USE}, email="alice@example.com")
    answers = await exchange(
        served.url, [INITIALIZE, INITIALIZED, call(2, "whoami"), call(3, "weather", city="Rome")], token
    )
    assert result_of(answers[2])["structuredContent"] == {
        "email": "alice@example.com",
        "token_length": len(token),
    }
    assert result_of(answers[3])["content"][0]["text"] == "sunny in Rome, alice"


async def test_a_tool_asks_for_more_scopes(served: Served) -> None:
    answers = await exchange(served.url, [INITIALIZE, INITIALIZED, call(2, "export")], served.token({USE}))
    result = result_of(answers[2])
    assert result["isError"] is True
    [challenge] = result["_meta"]["mcp/www_authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert EXPORT in challenge
    granted = await exchange(
        served.url, [INITIALIZE, INITIALIZED, call(2, "export")], served.token({USE, EXPORT})
    )
    assert result_of(granted[2])["content"][0]["text"] == "exported"


async def test_a_guest_cannot_reach_a_signed_in_session(served: Served) -> None:
    signed_in = await exchange(served.url, [INITIALIZE], served.token({USE}))
    session = signed_in[0].headers["mcp-session-id"]
    headers = {**POST_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(served.url, json=call(2, "weather", city="Oslo"), headers=headers)
    assert answer.status_code == 404


async def test_a_guest_reads_a_public_tools_widget(served: Served) -> None:
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    answers = await exchange(served.url, [INITIALIZE, INITIALIZED, listing])
    tools = {tool["name"]: tool for tool in result_of(answers[2])["tools"]}
    uri = tools["forecast"]["_meta"]["ui"]["resourceUri"]
    read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}
    answers = await exchange(served.url, [INITIALIZE, INITIALIZED, read])
    assert result_of(answers[2])["contents"][0]["text"].startswith("<!doctype html>")


def test_a_tool_removed_and_added_again_is_protected_again() -> None:
    server = build()
    assert "weather" in server.scopes.public
    server.remove_tool("weather")
    assert "weather" not in server.scopes.public

    @server.tool
    async def weather(city: str) -> str:
        return city

    assert not server.scopes.needs_token("tools/list", None)
    assert server.scopes.public == {"forecast"}, "the new weather needs a token"
