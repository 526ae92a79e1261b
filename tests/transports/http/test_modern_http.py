"""Streamable HTTP, 2026-07-28: self-contained POSTs, header rules, listen, cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from tests.transports.http.conftest import CANCELLED, GATES, HEADERS, STARTED, EventReader, Running, event

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


def body(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": META}}


def headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    found = {"mcp-protocol-version": VERSION, "mcp-method": method, **extra}
    if name is not None:
        found["mcp-name"] = name
    return found


async def test_discover_and_call_without_a_session(running: Running) -> None:
    discover = await running.post(body("server/discover"), **headers("server/discover"))
    assert discover.status_code == 200
    assert "mcp-session-id" not in discover.headers
    result = discover.json()["result"]
    assert VERSION in result["supportedVersions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "http-test"
    call = await running.post(
        body("tools/call", {"name": "echo", "arguments": {"text": "hi"}}), **headers("tools/call", "echo")
    )
    assert call.json()["result"]["content"][0]["text"] == "hi"
    assert call.json()["result"]["resultType"] == "complete"


@pytest.mark.parametrize(
    ("sent_headers", "method", "code"),
    [
        (headers("prompts/list"), "tools/list", -32020),
        ({"mcp-protocol-version": VERSION}, "tools/list", -32020),
        (headers("TOOLS/LIST"), "tools/list", -32020),
        (headers("tools/call", "wrong"), "tools/call", -32020),
        (headers("tools/call"), "tools/call", -32020),
        (headers("tools/list", **{"mcp-protocol-version": "2025-11-25"}), "tools/list", -32020),
    ],
)
async def test_headers_must_mirror_the_body(
    running: Running, sent_headers: dict[str, str], method: str, code: int
) -> None:
    params = {"name": "echo", "arguments": {"text": "x"}} if method == "tools/call" else {}
    response = await running.post(body(method, params, request_id=42), **sent_headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert response.json()["id"] == 42


async def test_header_names_are_case_insensitive(running: Running) -> None:
    response = await running.client.post(
        running.url,
        content=orjson.dumps(body("tools/list")),
        headers={**HEADERS, "MCP-METHOD": "tools/list", "Mcp-Protocol-Version": VERSION},
    )
    assert response.status_code == 200


async def test_envelope_errors(running: Running) -> None:
    no_meta = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    response = await running.post(no_meta, **headers("server/discover"))
    assert (response.status_code, response.json()["error"]["code"]) == (400, -32602)
    future = body("tools/list")
    future["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "v999"}
    agreeing = await running.post(future, **headers("tools/list", **{"mcp-protocol-version": "v999"}))
    assert (agreeing.status_code, agreeing.json()["error"]["code"]) == (400, -32022)
    assert agreeing.json()["error"]["data"]["requested"] == "v999"
    disagreeing = await running.post(future, **headers("tools/list"))
    assert (disagreeing.status_code, disagreeing.json()["error"]["code"]) == (400, -32020)


@pytest.mark.parametrize(
    "method", ["tools/teleport", "initialize", "ping", "logging/setLevel", "resources/subscribe"]
)
async def test_unknown_and_removed_methods_are_404(running: Running, method: str) -> None:
    response = await running.post(body(method, {"uri": "demo://note", "level": "info"}), **headers(method))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32601


async def test_get_and_delete_are_405(running: Running) -> None:
    get = await running.client.get(
        running.url, headers={"accept": "text/event-stream", "mcp-protocol-version": VERSION}
    )
    assert get.status_code == 405
    delete = await running.client.delete(running.url, headers={"mcp-protocol-version": VERSION})
    assert delete.status_code == 405


async def test_resource_not_found_is_invalid_params(running: Running) -> None:
    response = await running.post(
        body("resources/read", {"uri": "demo://none"}), **headers("resources/read", "demo://none")
    )
    assert response.status_code == 400
    assert response.json()["error"]["data"] == {"uri": "demo://none"}


async def test_listen_acknowledges_then_streams_filtered_changes(running: Running) -> None:
    listen = body(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True, "promptsListChanged": True}}, 77
    )
    async with running.client.stream(
        "POST", running.url, json=listen, headers={**HEADERS, **headers("subscriptions/listen")}
    ) as response:
        reader = EventReader(response)
        first = await reader.next()
        assert first is not None
        ack = orjson.loads(first.data)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"toolsListChanged": True}, "no prompts on this server"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77
        running.server.remove_tool("steps")
        change = await reader.next()
        assert change is not None
        changed = orjson.loads(change.data)
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77


async def test_closing_the_stream_cancels_the_request(running: Running) -> None:
    call = body(
        "tools/call", {"name": "wait", "arguments": {"gate": "never"}, "_meta": {**META, "progressToken": 1}}
    )
    request = asyncio.ensure_future(running.post(call, **headers("tools/call", "wait")))
    async with asyncio.timeout(10):
        await event(STARTED, "never").wait()
        request.cancel()  # the client gives up and closes its connection
        await asyncio.gather(request, return_exceptions=True)
        await event(CANCELLED, "never").wait()
    assert not event(GATES, "never").is_set()


async def test_cache_hints_on_lists(running: Running) -> None:
    response = await running.post(body("tools/list"), **headers("tools/list"))
    result = response.json()["result"]
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
