"""One 2026-07-28 request to a server process over HTTP: raw JSON-RPC, headers mirrored.

For the tests that talk to real server processes without a client library, so each says
what it asks and the envelope and headers are written once.
"""

from __future__ import annotations

from typing import Any

import httpx

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"}


def headers_for(method: str, name: str | None = None) -> dict[str, str]:
    """The headers a 2026-07-28 request of `method` carries (`Mcp-Name` when it names a thing)."""
    return {**HEADERS, "mcp-method": method, **({"mcp-name": name} if name is not None else {})}


def post(url: str, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The whole answer (result or error) to one request."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    answer: dict[str, Any] = httpx.post(url, json=body, headers=headers_for(method, name), timeout=30).json()
    return answer


def result(url: str, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The result of one request; an error answer fails the test."""
    answer = post(url, method, params, name)
    assert "result" in answer, answer
    found: dict[str, Any] = answer["result"]
    return found


def call_tool(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The result of `tools/call` of `tool`."""
    return result(url, "tools/call", {"name": tool, "arguments": arguments}, tool)


def structured(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured answer."""
    found: dict[str, Any] = call_tool(url, tool, arguments)["structuredContent"]
    return found
