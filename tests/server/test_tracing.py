"""Spans and the operation metrics, as OpenTelemetry's MCP conventions name them, in both eras."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode, format_span_id, format_trace_id

from herald import Context, Server, ToolError
from herald.client import connect_http
from herald.testing import connect
from herald.testing.http import serve_http
from herald.testing.telemetry import Recorded, recorded

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def build() -> Server:
    server = Server("traced")

    @server.tool
    async def echo(text: str) -> str:
        return text

    @server.tool
    async def refuse() -> str:
        raise ToolError("The catalog is closed today; try again tomorrow.")

    @server.tool
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {answer['content']['name']}!"

    @server.resource("demo://motto")
    async def motto() -> str:
        return "exact"

    @server.prompt()
    async def congrats(name: str) -> str:
        return f"Congratulations, {name}!"

    return server


@pytest.fixture
def seen() -> Iterator[Recorded]:
    with recorded() as found:
        yield found


def attributes(span: Any) -> dict[str, Any]:
    return dict(span.attributes)


async def test_handshake_era_requests_are_server_spans_named_by_the_conventions(seen: Recorded) -> None:
    async with connect(build()) as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.request("resources/read", {"uri": "demo://motto"})
        await client.request("prompts/get", {"name": "congrats", "arguments": {"name": "Ada"}})

    initialize = seen.span("initialize")
    assert initialize.kind is SpanKind.SERVER
    assert attributes(initialize) == {
        "mcp.method.name": "initialize",
        "jsonrpc.request.id": "1",
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "pipe",
    }
    initialized = seen.span("notifications/initialized")
    assert "jsonrpc.request.id" not in attributes(initialized), "a notification has no id"
    call = seen.span("tools/call echo")
    assert call.kind is SpanKind.SERVER
    assert attributes(call) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "2",
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "pipe",
    }
    assert call.status.status_code is StatusCode.UNSET
    assert call.parent is None, "no trace context came with it: a new trace"
    read = seen.span("resources/read")
    assert read.attributes["mcp.resource.uri"] == "demo://motto"
    prompt = seen.span("prompts/get congrats")
    assert prompt.attributes["gen_ai.prompt.name"] == "congrats"
    assert seen.total("mcp.server.operation.duration", {"mcp.method.name": "tools/call"}) == 1
    assert seen.total("mcp.server.session.duration", {"mcp.protocol.version": "2025-11-25"}) == 1


async def test_a_modern_call_joins_the_trace_in_its_meta(seen: Recorded) -> None:
    async with connect(build(), modern=True) as client:
        meta = {"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7"}
        await client.call_tool("echo", {"text": "hi"}, _meta=meta)

    call = seen.span("tools/call echo")
    assert format_trace_id(call.context.trace_id) == TRACE_ID
    assert format_span_id(call.parent.span_id) == PARENT_ID
    assert call.parent.is_remote
    assert call.context.trace_state.get("rojo") == "00f067aa0ba902b7"
    assert call.attributes["mcp.protocol.version"] == "2026-07-28"
    assert seen.total("mcp.server.session.duration") == 0, "a 2026-07-28 client has no session"


async def test_a_tool_error_and_a_protocol_error_set_the_error_type_and_status(seen: Recorded) -> None:
    async with connect(build()) as client:
        assert (await client.call_tool("refuse"))["isError"] is True
        refused = await client.request_raw("resources/read", {"uri": "demo://nothing"})
        code = refused["error"]["code"]

    tool_error = seen.span("tools/call refuse")
    assert tool_error.attributes["error.type"] == "tool_error"
    assert tool_error.status.status_code is StatusCode.ERROR
    assert tool_error.status.description == "tool_error", "not the tool's text, which may quote arguments"
    invalid = seen.span("resources/read")
    assert invalid.attributes["error.type"] == str(code)
    assert invalid.attributes["rpc.response.status_code"] == str(code)
    assert invalid.status.status_code is StatusCode.ERROR
    assert invalid.status.description == refused["error"]["message"]
    assert seen.total("mcp.server.operation.duration", {"error.type": "tool_error"}) == 1
    assert seen.total("mcp.server.operation.duration", {"error.type": str(code)}) == 1


async def test_made_up_methods_and_tools_do_not_grow_the_metrics(seen: Recorded) -> None:
    async with connect(build()) as client:
        for made_up in ("x/1", "x/2"):
            assert (await client.request_raw(made_up))["error"]["code"] == -32601
        await client.request_raw("tools/call", {"name": "no-such-tool", "arguments": {}})

    assert [span.name for span in seen.spans("_OTHER")] == ["_OTHER", "_OTHER"]
    assert seen.total("mcp.server.operation.duration", {"mcp.method.name": "_OTHER"}) == 2
    assert seen.span("tools/call _OTHER").attributes["gen_ai.tool.name"] == "_OTHER"


async def test_an_elicitation_is_a_client_span_whose_context_travels_in_its_meta(seen: Recorded) -> None:
    asked: list[dict[str, Any]] = []

    async def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Alice"}}

    async with connect(build(), capabilities={"elicitation": {}}, answer=answer) as client:
        assert (await client.call_tool("greet"))["content"][0]["text"] == "Hello, Alice!"

    call = seen.span("tools/call greet")
    elicitation = seen.span("elicitation/create")
    assert elicitation.kind is SpanKind.CLIENT
    assert elicitation.parent.span_id == call.context.span_id
    assert elicitation.context.trace_id == call.context.trace_id
    sent = asked[0]["_meta"]["traceparent"]
    trace_id, span_id = format_trace_id(call.context.trace_id), format_span_id(elicitation.context.span_id)
    assert sent.startswith(f"00-{trace_id}-{span_id}-"), "the sampled flag and the ids of the CLIENT span"
    assert seen.total("mcp.client.operation.duration", {"mcp.method.name": "elicitation/create"}) == 1


async def test_over_http_the_header_is_the_parent_when_the_meta_has_none(seen: Recorded) -> None:
    other = "0123456789abcdef0123456789abcdef"
    async with serve_http(build()) as (url, _), connect_http(url, False) as client:
        session = client.session_id
        assert seen.total("herald.http.sessions.open") == 1
        async with asyncio.timeout(10):  # the client's GET stream opens beside its requests
            while seen.total("herald.http.streams.open") != 1:  # noqa: ASYNC110 - a counter has no event
                await asyncio.sleep(0.01)
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-session-id": str(session),
            "mcp-protocol-version": "2025-11-25",
            "traceparent": TRACEPARENT,
        }
        async with httpx.AsyncClient() as http:
            body = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "a"}},
            }
            assert (await http.post(url, json=body, headers=headers)).status_code == 200
            meta = {"traceparent": f"00-{other}-{PARENT_ID}-01"}
            body = {"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"_meta": meta}}
            assert (await http.post(url, json=body, headers=headers)).status_code == 200

    from_header = seen.span("tools/call echo")
    assert format_trace_id(from_header.context.trace_id) == TRACE_ID
    assert from_header.attributes["network.transport"] == "tcp"
    assert from_header.attributes["network.protocol.name"] == "http"
    assert from_header.attributes["mcp.session.id"] == session
    assert from_header.attributes["client.address"] == "127.0.0.1"
    from_meta = next(span for span in seen.spans("ping") if span.attributes["jsonrpc.request.id"] == "8")
    assert format_trace_id(from_meta.context.trace_id) == other, "the _meta context comes first"
    assert [format_trace_id(link.context.trace_id) for link in from_meta.links] == [TRACE_ID]
    assert seen.total("herald.http.sessions.open") == 0, "opened, then closed by the client"
    assert seen.total("herald.http.streams.open") == 0


def test_off_means_no_opentelemetry_module_is_imported() -> None:
    script = """
import asyncio, sys
from herald import Server
from herald.testing import connect
server = Server("quiet")

@server.tool
async def echo(text: str) -> str:
    return text

async def main():
    async with connect(server) as client:
        await client.call_tool("echo", {"text": "hi"})

asyncio.run(main())
print(sorted(name for name in sys.modules if name.startswith(("opentelemetry", "prometheus_client"))))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


async def test_invalid_params_leave_their_message_out_of_the_span(seen: Recorded) -> None:
    async with connect(build()) as client:
        refused = await client.request_raw("prompts/get", {"name": "congrats", "arguments": {"name": 5}})
    assert refused["error"]["code"] == -32602
    span = seen.span("prompts/get congrats")
    assert span.attributes["error.type"] == "-32602"
    assert span.status.description == "Invalid params", "the message may quote the values sent"


async def test_a_code_the_client_makes_up_stays_on_the_span_but_not_in_the_metric(seen: Recorded) -> None:
    import herald.telemetry

    class Refused(Exception):
        pass

    async def send(params: dict[str, Any]) -> dict[str, Any]:
        raise Refused

    telemetry = herald.telemetry.active
    assert telemetry is not None
    for code in (4711, 4712, -32601):

        def refusal(_: BaseException, code: int = code) -> tuple[int, str]:
            return code, "no"

        with pytest.raises(Refused):
            await telemetry.request("roots/list", {}, {"mcp.method.name": "roots/list"}, send, refusal)
    assert [span.attributes["error.type"] for span in seen.spans("roots/list")] == ["4711", "4712", "-32601"]
    assert seen.total("mcp.client.operation.duration", {"error.type": "_OTHER"}) == 2
    assert seen.total("mcp.client.operation.duration", {"error.type": "-32601"}) == 1
