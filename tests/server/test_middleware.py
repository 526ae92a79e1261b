"""Middleware around every request: order, what it sees, refusals, and the three herald ships."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from herald import Server
from herald.client import connect_http
from herald.protocol.errors import ProtocolError
from herald.server.middleware import Call, CallNext, RateLimit, errors_as_tool_results, timing
from herald.testing import RPCError, connect
from herald.testing.http import serve_http


class Refused(ProtocolError):
    code = -32001


def build(seen: list[str]) -> Server:
    server = Server("onion")

    @server.tool
    async def echo(text: str) -> str:
        seen.append("handler")
        return text

    @server.resource("demo://motto")
    async def motto() -> str:
        return "exact"

    async def outer(call: Call, call_next: CallNext) -> dict[str, Any]:
        seen.append(f"outer in {call.method} {call.name}")
        result = await call_next(call)
        seen.append("outer out")
        return result

    async def inner(call: Call, call_next: CallNext) -> dict[str, Any]:
        seen.append("inner in")
        if call.params.get("arguments", {}).get("text") == "forbidden":
            return call.tool_error("That word is not allowed here.")
        if call.name == "demo://secret":
            raise Refused("Not for you.")
        result = await call_next(call)
        seen.append(f"inner saw {result.get('structuredContent')}")
        return result

    server.add_middleware(outer)
    server.add_middleware(inner)
    return server


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
async def test_registration_order_is_the_onion_order(modern: bool) -> None:
    seen: list[str] = []
    async with connect(build(seen), modern=modern) as client:
        seen.clear()
        result = await client.call_tool("echo", {"text": "hi"})
    assert result["content"][0]["text"] == "hi"
    assert seen == [
        "outer in tools/call echo",
        "inner in",
        "handler",
        "inner saw hi" if modern else "inner saw {'result': 'hi'}",  # a modern value goes bare
        "outer out",
    ]


async def test_middleware_refuses_with_a_tool_error_or_a_protocol_error() -> None:
    seen: list[str] = []
    async with connect(build(seen)) as client:
        refused = await client.call_tool("echo", {"text": "forbidden"})
        assert refused == {
            "content": [{"type": "text", "text": "That word is not allowed here."}],
            "isError": True,
        }
        assert "handler" not in seen
        with pytest.raises(RPCError) as raised:
            await client.request("resources/read", {"uri": "demo://secret"})
    assert (raised.value.code, raised.value.message) == (-32001, "Not for you.")


async def test_middleware_runs_on_http_in_both_eras() -> None:
    seen: list[str] = []
    async with serve_http(build(seen)) as (url, _):
        for modern in (False, True):
            async with connect_http(url, modern) as client:
                assert (await client.call_tool("echo", {"text": "forbidden"}))["isError"] is True
                assert (await client.call_tool("echo", {"text": "ok"}))["content"][0]["text"] == "ok"
    assert seen.count("outer in tools/call echo") == 4


async def test_a_rate_limit_answers_with_the_wait() -> None:
    now = [100.0]
    server = build([])
    server.middleware.clear()
    server.add_middleware(RateLimit(per_second=0.5, burst=2, clock=lambda: now[0]))
    async with connect(server) as client:
        assert "isError" not in await client.call_tool("echo", {"text": "1"})
        assert "isError" not in await client.call_tool("echo", {"text": "2"})
        limited = await client.call_tool("echo", {"text": "3"})
        assert limited["isError"] is True
        assert "Wait 2 s, then call echo again." in limited["content"][0]["text"]
        assert limited["_meta"] == {"retryAfterSeconds": 2.0}
        with pytest.raises(RPCError) as raised:
            await client.request("resources/read", {"uri": "demo://motto"})
        assert raised.value.code == -32029
        assert raised.value.data == {"retryAfterSeconds": 2.0}
        now[0] += 2.0  # one token back
        assert "isError" not in await client.call_tool("echo", {"text": "4"})


async def test_each_caller_has_a_bucket_of_its_own() -> None:
    server = build([])
    server.middleware.clear()
    server.add_middleware(RateLimit(per_second=0.001, burst=1, methods=frozenset({"tools/call"})))
    async with connect(server) as first, connect(server) as second:
        assert "isError" not in await first.call_tool("echo", {"text": "a"})
        assert "isError" not in await second.call_tool("echo", {"text": "b"}), (
            "another session, another bucket"
        )
        assert (await first.call_tool("echo", {"text": "c"}))["isError"] is True
        assert (await first.request("resources/read", {"uri": "demo://motto"}))["contents"], "only tools/call"


async def test_errors_from_middleware_leak_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    server = build([])
    server.middleware.clear()

    async def broken(call: Call, call_next: CallNext) -> dict[str, Any]:
        raise KeyError("secret-table-name")

    server.add_middleware(errors_as_tool_results())
    server.add_middleware(broken)
    async with connect(server) as client:
        result = await client.call_tool("echo", {"text": "x"})
        with pytest.raises(RPCError) as raised:
            await client.request("resources/read", {"uri": "demo://motto"})
    said = result["content"][0]["text"]
    assert result["isError"] is True
    assert said == "Tool 'echo' failed with an internal error; try again later."
    assert (raised.value.code, raised.value.message) == (-32603, "Internal error")
    assert "secret-table-name" in caplog.text, "the traceback is logged, not sent"


async def test_timing_logs_a_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="herald.middleware")
    server = build([])
    server.middleware.clear()
    server.add_middleware(timing())
    async with connect(server) as client:
        await client.call_tool("echo", {"text": "x"})
        with pytest.raises(RPCError):
            await client.request("resources/read", {"uri": "demo://nothing"})
    lines = [record.getMessage() for record in caplog.records if record.name == "herald.middleware"]
    assert any(line.startswith("tools/call echo by session:") and ": ok in " in line for line in lines), lines
    assert any(
        line.startswith("resources/read demo://nothing") and "error -32602" in line for line in lines
    ), lines


def test_a_rate_limit_needs_a_rate() -> None:
    with pytest.raises(ValueError, match="per_second > 0"):
        RateLimit(per_second=0, burst=1)
