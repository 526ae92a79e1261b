"""Every method through a real Connection, in the handshake era."""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated

import orjson
import pytest
from pydantic import AfterValidator

from herald import Server
from herald.testing import connect
from tests.server.conftest import GATES


async def test_tools_list_pages_with_cursors(server: Server) -> None:
    async with connect(server) as client:
        names: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await client.request("tools/list", {"cursor": cursor} if cursor else {})
            names += [tool["name"] for tool in page["tools"]]
            pages += 1
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert names == list(server.registry.tools)
        assert pages == (len(names) + 1) // 2
        bad = await client.request_raw("tools/list", {"cursor": "garbage"})
        assert bad["error"]["code"] == -32602


async def test_tool_definition_passes_through(server: Server) -> None:
    async with connect(server) as client:
        tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
        echo = tools["echo"]
        assert echo["title"] == "Echo"
        assert echo["annotations"] == {"readOnlyHint": True}
        assert echo["_meta"] == {"demo/kind": "echo"}
        assert echo["description"] == "Return the text unchanged."
        assert echo["inputSchema"]["properties"]["text"] == {
            "type": "string",
            "description": "What to say back",
        }
        assert echo["inputSchema"]["required"] == ["text"]
        assert tools["add"]["outputSchema"]["properties"] == {"total": {"type": "integer"}}


async def test_structured_output(server: Server) -> None:
    async with connect(server) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"total": 5}
        assert orjson.loads(result["content"][0]["text"]) == {"total": 5}
        assert "isError" not in result


async def test_output_schema_is_enforced(server: Server) -> None:
    async with connect(server) as client:
        result = await client.call_tool("broken_output")
        assert result["isError"] is True
        assert "outputSchema" in result["content"][0]["text"]
        assert "structuredContent" not in result


@pytest.mark.parametrize(
    ("version", "as_result"),
    [("2024-11-05", False), ("2025-03-26", False), ("2025-06-18", False), ("2025-11-25", True)],
)
async def test_argument_errors_per_revision(server: Server, version: str, as_result: bool) -> None:
    async with connect(server, version=version) as client:
        response = await client.request_raw("tools/call", {"name": "add", "arguments": {"a": "two"}})
        if as_result:
            result = response["result"]
            assert result["isError"] is True
            assert "'add'" in result["content"][0]["text"]
            assert "a" in result["content"][0]["text"]
        else:
            assert response["error"]["code"] == -32602
            assert "Invalid arguments for tool 'add'" in response["error"]["message"]


def even(number: int) -> int:
    if number % 2:
        raise ValueError("must be even")
    return number


async def test_arguments_the_schema_admits_but_pydantic_refuses_are_the_caller_s_to_fix() -> None:
    """A validator the JSON Schema cannot express refuses the value: a tool error, never -32603."""

    server = Server("strict")

    @server.tool
    def halve(n: Annotated[int, AfterValidator(even)]) -> int:
        """Half of an even number."""
        return n // 2

    async with connect(server) as client:
        response = await client.request_raw("tools/call", {"name": "halve", "arguments": {"n": 3}})
    result = response["result"]
    assert result["isError"] is True
    assert "Invalid arguments for tool 'halve': n: Value error, must be even" in result["content"][0]["text"]


async def test_wrong_field_names_get_invalid_params(server: Server) -> None:
    async with connect(server) as client:
        response = await client.request_raw("tools/call", {"tool": "echo", "args": {"text": "x"}})
        assert response["error"]["code"] == -32602
        assert "got 'tool'; the field is called 'name'" in response["error"]["message"]
        response = await client.request_raw("resources/read", {"resourceId": "demo://readme"})
        assert "got 'resourceId'; the field is called 'uri'" in response["error"]["message"]


async def test_unknown_tool_is_invalid_params(server: Server) -> None:
    async with connect(server) as client:
        response = await client.request_raw("tools/call", {"name": "nope", "arguments": {}})
        assert response["error"]["code"] == -32602
        assert "nope" in response["error"]["message"]


async def test_business_and_internal_failures(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    async with connect(server) as client:
        business = await client.call_tool("fail", {"reason": "sold out"})
        assert business == {
            "content": [{"type": "text", "text": "cannot do that: sold out"}],
            "isError": True,
        }
        crash = await client.call_tool("crash")
        assert crash["isError"] is True
        assert "secret internal detail" not in crash["content"][0]["text"]
        assert "secret internal detail" in caplog.text


async def test_progress_reaches_the_request(server: Server) -> None:
    async with connect(server) as client:
        result = await client.call_tool("steps", {"count": 4}, _meta={"progressToken": "tok"})
        assert result["content"][0]["text"] == "done"
        progress = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
        assert [p["progress"] for p in progress] == [1, 2, 3, 4]
        assert {p["progressToken"] for p in progress} == {"tok"}
        assert progress[0]["total"] == 4
        assert progress[0]["message"] == "step 1"


async def test_no_progress_without_a_token(server: Server) -> None:
    async with connect(server) as client:
        await client.call_tool("steps", {"count": 3})
        assert [n for n in client.notifications if n["method"] == "notifications/progress"] == []


async def test_decreasing_progress_raises_in_the_tool_and_never_reaches_the_wire(server: Server) -> None:
    async with connect(server) as client:
        result = await client.call_tool("backwards", _meta={"progressToken": 1})
        assert result["isError"] is True
        values = [
            n["params"]["progress"] for n in client.notifications if n["method"] == "notifications/progress"
        ]
        assert values == [5]


async def test_slow_tool_does_not_block_ping(server: Server) -> None:
    async with connect(server) as client:
        slow = asyncio.ensure_future(client.call_tool("wait", {"gate": "g"}))
        assert await client.request("ping") == {}
        assert not slow.done()
        GATES["g"].set()
        assert (await slow)["content"][0]["text"] == "opened g"


async def test_cancellation_stops_the_handler_and_sends_no_response(server: Server) -> None:
    async with connect(server) as client:
        client.drop_frames()
        client.send_raw(
            orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 77,
                    "method": "tools/call",
                    "params": {"name": "wait", "arguments": {"gate": "c"}},
                }
            )
        )
        await asyncio.sleep(0)  # let the request start
        assert client.connection.in_flight == 1
        client.notify("notifications/cancelled", {"requestId": 77, "reason": "user gave up"})
        assert await client.request("ping") == {}
        await client.connection.aclose()
        assert client.connection.in_flight == 0
        assert not GATES["c"].is_set()
        assert all(isinstance(frame, dict) and frame.get("id") != 77 for frame in client.received)


async def test_a_request_cancelled_before_it_began_frees_its_id(server: Server) -> None:
    """The cancellation right behind the request, in the same read: its task has not begun."""
    async with connect(server) as client:
        client.drop_frames()
        call = {
            "jsonrpc": "2.0",
            "id": 78,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {"gate": "never begun"}},
        }
        client.send_raw(orjson.dumps(call))
        client.notify("notifications/cancelled", {"requestId": 78})
        assert await client.request("ping") == {}
        assert client.connection.in_flight == 0, "it ended as it began"
        reused = await client.request_raw("ping", request_id=78)
        assert reused == {"jsonrpc": "2.0", "id": 78, "result": {}}, "the id is free again"
        assert "never begun" not in GATES, "the tool never ran"
        assert [frame for frame in client.received if frame.get("id") == 78] == [reused], (
            "no reply to the first"
        )


async def test_duplicate_id_in_flight(server: Server) -> None:
    async with connect(server) as client:
        frame = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "wait", "arguments": {"gate": "d"}},
            }
        )
        client.drop_frames()
        client.send_raw(frame)
        client.send_raw(frame)
        duplicate = await client.next_frame()
        assert duplicate["id"] == 5
        assert duplicate["error"]["code"] == -32600
        assert "already in use" in duplicate["error"]["message"]
        GATES["d"].set()
        assert (await client.next_frame())["result"]["content"][0]["text"] == "opened d"


async def test_logging_respects_set_level(server: Server) -> None:
    async with connect(server) as client:
        await client.call_tool("chatty")
        assert [n["params"]["data"] for n in client.notifications] == ["info line", "error line"]
        client.notifications.clear()
        assert await client.request("logging/setLevel", {"level": "debug"}) == {}
        await client.call_tool("chatty")
        assert [n["params"]["level"] for n in client.notifications] == ["debug", "info", "error"]
        client.notifications.clear()
        await client.request("logging/setLevel", {"level": "error"})
        await client.call_tool("chatty")
        assert [n["params"]["data"] for n in client.notifications] == ["error line"]
        bad = await client.request_raw("logging/setLevel", {"level": "loud"})
        assert bad["error"]["code"] == -32602


async def test_resources(server: Server) -> None:
    async with connect(server) as client:
        listed = await client.request("resources/list")
        assert listed["resources"][0] == {
            "uri": "demo://readme",
            "name": "readme",
            "description": "Read me",
            "mimeType": "text/plain",
        }
        text = await client.request("resources/read", {"uri": "demo://readme"})
        assert text["contents"] == [{"uri": "demo://readme", "mimeType": "text/plain", "text": "hello"}]
        blob = await client.request("resources/read", {"uri": "demo://logo"})
        assert base64.b64decode(blob["contents"][0]["blob"]) == b"\x89PNG"
        templates = await client.request("resources/templates/list")
        assert templates["resourceTemplates"][0]["uriTemplate"] == "demo://items/{item_id}"
        item = await client.request("resources/read", {"uri": "demo://items/42"})
        assert orjson.loads(item["contents"][0]["text"]) == {"id": "42"}


@pytest.mark.parametrize("uri", ["demo://nothing", "demo://items/missing", "demo://items/a/b"])
async def test_unknown_resource_uses_the_legacy_code(server: Server, uri: str) -> None:
    async with connect(server) as client:
        response = await client.request_raw("resources/read", {"uri": uri})
        assert response["error"]["code"] == -32002
        assert response["error"]["data"] == {"uri": uri}


async def test_subscriptions(server: Server) -> None:
    async with connect(server) as client:
        server.notify_resource_updated("demo://readme")
        assert client.notifications == []
        assert await client.request("resources/subscribe", {"uri": "demo://readme"}) == {}
        server.notify_resource_updated("demo://readme")
        server.notify_resource_updated("demo://logo")
        assert [n["params"]["uri"] for n in client.notifications] == ["demo://readme"]
        await client.request("resources/unsubscribe", {"uri": "demo://readme"})
        server.notify_resource_updated("demo://readme")
        assert len(client.notifications) == 1


async def test_prompts(server: Server) -> None:
    async with connect(server) as client:
        listed = await client.request("prompts/list")
        assert listed["prompts"][0]["arguments"] == [
            {"name": "name", "required": True},
            {"name": "tone", "required": False},
        ]
        rendered = await client.request("prompts/get", {"name": "greeting", "arguments": {"name": "Ada"}})
        assert rendered["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "Write a warm greeting for Ada."}}
        ]
        missing = await client.request_raw("prompts/get", {"name": "greeting", "arguments": {}})
        assert missing["error"]["code"] == -32602
        assert "name" in missing["error"]["message"]


async def test_completion(server: Server) -> None:
    async with connect(server) as client:
        prompt = await client.request(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "tone", "value": "f"}},
        )
        assert prompt["completion"] == {"values": ["formal"], "total": 1, "hasMore": False}
        template = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "demo://items/{item_id}"},
                "argument": {"name": "item_id", "value": "ap"},
            },
        )
        assert template["completion"]["values"] == ["apple", "apricot"]


async def test_list_changed_at_run_time(server: Server) -> None:
    async with connect(server) as client:

        @server.tool
        def late() -> str:
            """Added while serving."""
            return "late"

        server.remove_prompt("greeting")
        methods = [n["method"] for n in client.notifications]
        assert methods == [
            "notifications/tools/list_changed"
        ]  # the prompts capability left with the last prompt
        names = [tool["name"] for tool in (await client.request("tools/list", {"cursor": None}))["tools"]]
        assert names[:2] == ["echo", "add"]


async def test_internal_error_is_sanitized(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("fragile")

    @server.resource("demo://fragile")
    def fragile() -> str:
        raise RuntimeError("database password is hunter2")

    async with connect(server) as client:
        response = await client.request_raw("resources/read", {"uri": "demo://fragile"})
        assert response["error"] == {"code": -32603, "message": "Internal error"}
        assert "hunter2" in caplog.text
        assert await client.request("ping") == {}
