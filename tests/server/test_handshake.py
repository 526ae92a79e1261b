"""The handshake era through a real Connection: lifecycle, versions, capabilities."""

from __future__ import annotations

import pytest

from herald import Server
from herald.testing import InMemoryClient, RPCError, connect

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_initialize_echoes_supported_versions(server: Server, version: str) -> None:
    async with InMemoryClient(server) as client:
        result = await client.initialize(version)
        assert result["protocolVersion"] == version
        assert result["serverInfo"] == {"name": "demo", "version": "1.2.3"}
        assert result["instructions"] == "A server for tests."


@pytest.mark.parametrize("version", ["1999-01-01", "2026-07-28", "latest"])
async def test_initialize_answers_latest_for_unknown_versions(server: Server, version: str) -> None:
    result = await InMemoryClient(server).initialize(version)
    assert result["protocolVersion"] == "2025-11-25"


async def test_capabilities_follow_the_registry(server: Server) -> None:
    result = await InMemoryClient(server).initialize()
    assert result["capabilities"] == {
        "logging": {},
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
    }
    bare = await InMemoryClient(Server("bare")).initialize()
    assert bare["capabilities"] == {"logging": {}}


async def test_methods_outside_capabilities_are_not_found() -> None:
    async with connect(Server("bare")) as client:
        for method in ("tools/list", "prompts/list", "resources/list", "completion/complete"):
            response = await client.request_raw(method, {})
            assert response["error"]["code"] == -32601, method


async def test_requests_before_initialize_are_refused_but_ping_works(server: Server) -> None:
    async with InMemoryClient(server) as client:
        refused = await client.request_raw("tools/list")
        assert refused["error"]["code"] == -32600
        assert "initialize" in refused["error"]["message"]
        assert await client.request("ping") == {}


async def test_second_initialize_is_refused(server: Server) -> None:
    async with connect(server) as client:
        response = await client.request_raw("initialize", INIT)
        assert response["error"]["code"] == -32600
        assert "already initialized" in response["error"]["message"]


async def test_invalid_initialize_leaves_session_uninitialized(server: Server) -> None:
    async with InMemoryClient(server) as client:
        response = await client.request_raw("initialize", {"version": "2025-11-25"})
        assert response["error"]["code"] == -32602
        assert "protocolVersion" in response["error"]["message"]
        assert (await client.initialize())["protocolVersion"] == "2025-11-25"


async def test_nothing_is_sent_before_initialized(server: Server) -> None:
    async with InMemoryClient(server) as client:
        await client.request("initialize", INIT)
        server.remove_tool("crash")
        assert client.notifications == []
        client.notify("notifications/initialized")
        server.remove_tool("fail")
        assert [n["method"] for n in client.notifications] == ["notifications/tools/list_changed"]


async def test_list_changed_only_where_declared() -> None:
    server = Server("tools-only")

    @server.tool
    def one() -> str:
        """One."""
        return "1"

    async with connect(server) as client:

        @server.prompt()
        def first() -> str:
            return "p"

        # prompts were not declared when this session started? They are now; capabilities are live.
        server.remove_tool("one")
        methods = [n["method"] for n in client.notifications]
        assert (
            "notifications/tools/list_changed" not in methods
        )  # tools capability is gone with the last tool
        assert "notifications/prompts/list_changed" in methods


async def test_unknown_method(server: Server) -> None:
    async with connect(server) as client:
        response = await client.request_raw("tools/teleport", {})
        assert response["error"]["code"] == -32601
        modern_only = await client.request_raw("server/discover", {})
        assert modern_only["error"]["code"] == -32602  # a discovery without its _meta envelope


async def test_batches_only_on_2025_03_26(server: Server) -> None:
    batch = (
        b'[{"jsonrpc":"2.0","id":"a","method":"ping"},'
        b'{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}},'
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},'
        b'{"jsonrpc":"2.0","id":"c"}]'
    )
    async with connect(server, version="2025-03-26") as client:
        client.drop_frames()
        client.send_raw(batch)
        reply = await client.next_frame()
        assert isinstance(reply, list), "a batch is answered with one array, in the batch's order"
        assert [item["id"] for item in reply] == ["a", "b", "c"]
        assert reply[1]["result"]["content"][0]["text"] == "x"
        assert reply[2]["error"]["code"] == -32600
    async with connect(server, version="2025-06-18") as client:
        client.drop_frames()
        client.send_raw(batch)
        assert client.received[0]["error"]["code"] == -32600
        assert "batch" in client.received[0]["error"]["message"]
        assert client.received[0]["id"] is None


async def test_parse_error_keeps_the_session_alive(server: Server) -> None:
    async with connect(server) as client:
        client.drop_frames()
        client.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": ')
        assert client.received[-1] == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": client.received[-1]["error"]["message"]},
        }
        client.send_raw(b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": [1]}')
        assert client.received[-1]["id"] == 9
        assert client.received[-1]["error"]["code"] == -32600
        assert await client.request("ping") == {}


async def test_oversize_message_gets_an_error_and_serving_goes_on(server: Server) -> None:
    async with connect(server) as client:
        client.connection.protocol.max_message_bytes = 1000
        client.drop_frames()
        client.send_raw(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
            + b"x" * 2000
            + b'"}}}'
        )
        assert client.received[-1]["error"]["code"] == -32600
        assert "exceeds the limit" in client.received[-1]["error"]["message"]
        assert (await client.call_tool("echo", {"text": "small"}))["content"][0]["text"] == "small"


async def test_rpc_error_type(server: Server) -> None:
    async with connect(server) as client:
        with pytest.raises(RPCError) as caught:
            await client.request("prompts/get", {"name": "nope"})
        assert caught.value.code == -32602
