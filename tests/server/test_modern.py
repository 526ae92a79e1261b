"""The 2026-07-28 era on the same connection: no handshake, everything in `_meta`."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from herald import Context, Server
from herald.testing import InMemoryClient, connect

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


async def test_discover_without_handshake(server: Server) -> None:
    async with connect(server, modern=True) as client:
        result = await client.request("server/discover")
        assert "2026-07-28" in result["supportedVersions"]
        assert "2025-11-25" in result["supportedVersions"]
        assert result["capabilities"] == server.capabilities()
        assert result["resultType"] == "complete"
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
        assert result["_meta"][SERVER_INFO_KEY] == {"name": "demo", "version": "1.2.3"}
        assert result["instructions"] == "A server for tests."


async def test_calls_work_without_initialize(server: Server) -> None:
    async with connect(server, modern=True) as client:
        result = await client.call_tool("add", {"a": 1, "b": 1})
        assert result["structuredContent"] == {"total": 2}
        assert result["resultType"] == "complete"
        assert result["_meta"][SERVER_INFO_KEY]["name"] == "demo"
        assert client.connection.session is None, "no session is created in the modern era"


@pytest.mark.parametrize(
    "method", ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]
)
async def test_list_results_carry_cache_hints(server: Server, method: str) -> None:
    async with connect(server, modern=True) as client:
        result = await client.request(method)
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 0
        assert result["cacheScope"] == "private"


async def test_read_carries_cache_hints_and_unknown_uri_is_invalid_params(server: Server) -> None:
    async with connect(server, modern=True) as client:
        read = await client.request("resources/read", {"uri": "demo://readme"})
        assert (read["ttlMs"], read["cacheScope"], read["resultType"]) == (0, "private", "complete")
        missing = await client.request_raw("resources/read", {"uri": "demo://nothing"})
        assert missing["error"]["code"] == -32602
        assert missing["error"]["data"] == {"uri": "demo://nothing"}


async def test_unsupported_version_lists_the_supported_ones(server: Server) -> None:
    async with InMemoryClient(server) as client:
        response = await client.request_raw(
            "tools/list", {"_meta": {VERSION_KEY: "v999.0.0", CAPABILITIES_KEY: {}}}
        )
        assert response["error"]["code"] == -32022
        assert response["error"]["data"] == {"supported": ["2026-07-28"], "requested": "v999.0.0"}


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {CAPABILITIES_KEY: {}},
        {VERSION_KEY: "2026-07-28"},
        {VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: []},
    ],
)
async def test_broken_envelope_is_invalid_params(server: Server, meta: dict[str, object] | None) -> None:
    async with InMemoryClient(server) as client:
        params = {} if meta is None else {"_meta": meta}
        response = await client.request_raw("server/discover", params)
        assert response["error"]["code"] == -32602


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe"])
async def test_removed_methods_are_not_found(server: Server, method: str) -> None:
    async with connect(server, modern=True) as client:
        response = await client.request_raw(method, {"uri": "demo://readme", "level": "info"})
        assert response["error"]["code"] == -32601


async def test_logs_only_when_the_request_opts_in(server: Server) -> None:
    async with connect(server, modern=True) as client:
        await client.call_tool("chatty")
        assert client.notifications == []
        await client.call_tool("chatty", _meta={"io.modelcontextprotocol/logLevel": "error"})
        assert [n["params"]["data"] for n in client.notifications] == ["error line"]


async def test_progress_uses_the_meta_token(server: Server) -> None:
    async with connect(server, modern=True) as client:
        await client.call_tool("steps", {"count": 2}, _meta={"progressToken": 9})
        assert [n["params"]["progress"] for n in client.notifications] == [1, 2]


async def test_argument_errors_are_results(server: Server) -> None:
    async with connect(server, modern=True) as client:
        result = await client.call_tool("add", {"b": 1})
        assert result["isError"] is True
        assert result["resultType"] == "complete"


async def test_both_eras_on_one_connection(server: Server) -> None:
    async with connect(server) as client:
        handshake = await client.request("tools/list")
        assert "resultType" not in handshake
        client.modern = True
        modern = await client.request("tools/list")
        assert modern["resultType"] == "complete"
        assert [tool["name"] for tool in modern["tools"]] == [tool["name"] for tool in handshake["tools"]]


async def test_capabilities_are_per_request(server: Server) -> None:
    async with connect(server, modern=True, capabilities={"sampling": {}}) as client:
        scope_capabilities: list[bool] = []

        @server.tool
        async def which(ctx: Context) -> str:
            """Reports the client's sampling support."""
            scope_capabilities.append(ctx.client_supports("sampling"))
            return "ok"

        await client.call_tool("which")
        client.capabilities = {}
        await client.call_tool("which")
        assert scope_capabilities == [True, False]


async def test_listen_on_a_message_stream(server: Server) -> None:
    async with connect(server, modern=True) as client:
        listen = client._with_envelope(
            {"notifications": {"toolsListChanged": True, "promptsListChanged": False}}
        )
        client.send_raw(
            orjson.dumps({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": listen})
        )
        ack = await client.next_frame()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"toolsListChanged": True}
        assert ack["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "sub"}
        server.remove_tool("crash")
        change = await client.next_frame()
        assert change["method"] == "notifications/tools/list_changed"
        assert change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"
        server.remove_prompt("greeting")  # not asked for: nothing arrives
        client.notify("notifications/cancelled", {"requestId": "sub"})
        assert await client.request("server/discover")  # the connection goes on
        assert not any(frame.get("id") == "sub" for frame in client.received if isinstance(frame, dict))
        assert [n["method"] for n in client.notifications].count("notifications/prompts/list_changed") == 0


async def test_open_listen_does_not_hold_up_closing(server: Server) -> None:
    async with InMemoryClient(server, modern=True) as client:
        listen = client._with_envelope({"notifications": {"toolsListChanged": True}})
        client.send_raw(
            orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": listen})
        )
        await client.next_frame()
        await asyncio.wait_for(client.aclose(), 5)
        assert client.connection.in_flight == 0
