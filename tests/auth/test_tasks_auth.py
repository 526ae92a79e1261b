"""MCP Tasks under authentication: another principal is told a task does not exist, by every
task method, in the very words an unknown task id gets; its owner, on a new session, still
reaches it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from herald import Server
from herald.auth import AuthConfig
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.auth.issuer import Issuer
from tests.messages import INITIALIZE, INITIALIZED, POST_HEADERS

#: The audience need not be the address served: it is the URI the operator configured.
AUDIENCE = "https://tasks.example.com/mcp"
UNKNOWN = "0" * 32


@dataclass
class Caller:
    """One principal's session on the server."""

    http: httpx.AsyncClient
    url: str
    headers: dict[str, str]

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        answer = await self.http.post(self.url, json=body, headers=self.headers)
        assert answer.status_code == 200, answer.text
        message: dict[str, Any] = answer.json()
        return message


@dataclass
class Served:
    issuer: Issuer
    url: str
    http: httpx.AsyncClient

    async def caller(self, subject: str) -> Caller:
        token = self.issuer.mint(audience=AUDIENCE, subject=subject)
        headers = POST_HEADERS | {"authorization": f"Bearer {token}"}
        opened = await self.http.post(self.url, json=INITIALIZE, headers=headers)
        assert opened.status_code == 200, opened.text
        headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        assert (await self.http.post(self.url, json=INITIALIZED, headers=headers)).status_code == 202
        return Caller(self.http, self.url, headers)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    server = Server("tasks-behind-auth")

    @server.tool(task_support="optional")
    async def compute(seconds: float) -> str:
        """Takes a while."""
        await asyncio.sleep(seconds)
        return f"computed for {seconds}s"

    issuer = Issuer()
    config = HttpConfig(auth=AuthConfig(issuer=issuer.url, audience=AUDIENCE))
    async with (
        issuer.serving(),
        serve_http(server, config) as (url, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        yield Served(issuer, url, http)


def said(answer: dict[str, Any], task_id: str) -> Any:
    """What an answer says, with the task id it names taken out."""
    return str(answer.get("error", answer.get("result"))).replace(task_id, "ID")


async def test_another_principals_task_is_an_unknown_one(served: Served) -> None:
    alice, mallory = await served.caller("alice"), await served.caller("mallory")
    created = await alice.request("tools/call", {"name": "compute", "arguments": {"seconds": 30}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        hidden = await mallory.request(method, {"taskId": task_id})
        unknown = await mallory.request(method, {"taskId": UNKNOWN})
        assert "error" in hidden, (method, hidden)
        assert said(hidden, task_id) == said(unknown, UNKNOWN), method
    assert (await mallory.request("tasks/list", {}))["result"]["tasks"] == []

    again = await served.caller("alice")  # the same principal on another session
    assert (await again.request("tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
    cancelled = await again.request("tasks/cancel", {"taskId": task_id})
    assert cancelled["result"]["status"] == "cancelled"
