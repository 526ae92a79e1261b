"""Asking the client for input: server-to-client requests (handshake) and input_required (modern)."""

from __future__ import annotations

from typing import Any

import pytest

from herald import Context, Server
from herald.testing import connect

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build() -> Server:
    server = Server("asker")

    @server.tool
    async def greet(ctx: Context) -> str:
        """Asks for a name, then greets."""
        answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        if answer["action"] != "accept":
            return "No name given."
        return f"Hello, {answer['content']['name']}!"

    @server.tool
    async def two_steps(ctx: Context) -> str:
        """Asks twice, one round after the other, and keeps its own state between rounds."""
        first = await ctx.elicit("Name?", NAME_SCHEMA, key="step1")
        second = await ctx.ask(
            {"step2": ("sampling/createMessage", {"messages": [], "maxTokens": 5})},
            state={"seen": first["content"]["name"]},
        )
        carried = ctx.request_state["seen"] if ctx.request_state else first["content"]["name"]
        return f"{carried} / {second['step2']['content']['text']}"

    @server.tool
    async def confirm(message: str, ctx: Context) -> str:
        """Asks the person to confirm `message`."""
        answer = await ctx.elicit(message, NAME_SCHEMA, key="confirmed")
        return f"{message} -> {answer['action']}"

    @server.tool
    async def roots(ctx: Context) -> str:
        """Lists the client's roots."""
        return ", ".join(root["uri"] for root in await ctx.list_roots())

    return server


async def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "elicitation/create":
        return {"action": "accept", "content": {"name": "Alice"}}
    if method == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "blue"}, "model": "m"}
    return {"roots": [{"uri": "file:///work", "name": "work"}]}


CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


async def test_handshake_era_asks_on_the_stream() -> None:
    async with connect(build(), capabilities=CAPABILITIES, answer=answer) as client:
        result = await client.call_tool("greet")
        assert result["content"][0]["text"] == "Hello, Alice!"
        request = client.server_requests[0]
        assert request["method"] == "elicitation/create"
        assert request["params"]["requestedSchema"] == NAME_SCHEMA
        assert (await client.call_tool("two_steps"))["content"][0]["text"] == "Alice / blue"
        assert (await client.call_tool("roots"))["content"][0]["text"] == "file:///work"


async def test_handshake_era_client_without_the_capability() -> None:
    async with connect(build(), capabilities={}, answer=answer) as client:
        response = await client.request_raw("tools/call", {"name": "greet", "arguments": {}})
        assert response["error"]["code"] == -32021
        assert response["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
        assert client.server_requests == []


async def test_modern_era_round_trip() -> None:
    async with connect(build(), modern=True, capabilities=CAPABILITIES) as client:
        first = await client.call_tool("greet")
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        assert client.server_requests == [], "no server-to-client request in the modern era"
        done = await client.call_tool(
            "greet",
            inputResponses={"user_name": {"action": "accept", "content": {"name": "Bob"}}},
            requestState=first["requestState"],
        )
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "Hello, Bob!"


async def test_modern_era_answers_without_state_and_with_extra_keys() -> None:
    async with connect(build(), modern=True, capabilities=CAPABILITIES) as client:
        done = await client.call_tool(
            "greet",
            inputResponses={"user_name": {"action": "accept", "content": {"name": "Cy"}}, "other": {}},
        )
        assert done["content"][0]["text"] == "Hello, Cy!"


@pytest.mark.parametrize(
    "responses",
    [{"wrong_key": {"action": "accept"}}, {"user_name": {"no": "action"}}, {"user_name": 12345}, None],
)
async def test_modern_era_asks_again_for_missing_or_malformed_answers(
    responses: dict[str, Any] | None,
) -> None:
    async with connect(build(), modern=True, capabilities=CAPABILITIES) as client:
        again = await client.call_tool("greet", inputResponses=responses)
        assert again["resultType"] == "input_required"
        assert "user_name" in again["inputRequests"]


async def test_modern_era_multi_round_keeps_earlier_answers() -> None:
    async with connect(build(), modern=True, capabilities=CAPABILITIES) as client:
        round1 = await client.call_tool("two_steps")
        assert list(round1["inputRequests"]) == ["step1"]
        round2 = await client.call_tool(
            "two_steps",
            inputResponses={"step1": {"action": "accept", "content": {"name": "Dee"}}},
            requestState=round1["requestState"],
        )
        assert list(round2["inputRequests"]) == ["step2"]
        assert round2["requestState"] != round1["requestState"]
        round3 = await client.call_tool(
            "two_steps",
            inputResponses={
                "step2": {"role": "assistant", "content": {"type": "text", "text": "red"}, "model": "m"}
            },
            requestState=round2["requestState"],
        )
        assert round3["content"][0]["text"] == "Dee / red"


async def test_modern_era_refuses_tampered_or_foreign_state() -> None:
    async with connect(build(), modern=True, capabilities=CAPABILITIES) as client:
        first = await client.call_tool("two_steps")
        tampered = await client.request_raw(
            "tools/call",
            {"name": "two_steps", "arguments": {}, "requestState": first["requestState"] + "-TAMPERED"},
        )
        assert tampered["error"]["code"] == -32602
        foreign = await client.request_raw(
            "tools/call", {"name": "greet", "arguments": {}, "requestState": first["requestState"]}
        )
        assert foreign["error"]["code"] == -32602
        other_server = build()
        async with connect(other_server, modern=True, capabilities=CAPABILITIES) as elsewhere:
            replayed = await elsewhere.request_raw(
                "tools/call", {"name": "two_steps", "arguments": {}, "requestState": first["requestState"]}
            )
            assert replayed["error"]["code"] == -32602, "a server with another key cannot open the state"


async def test_modern_era_state_is_bound_to_the_arguments_it_was_minted_for() -> None:
    """A state minted for "delete A?" carries the answer given to that question: not to "delete B?"."""
    async with connect(build(), modern=True, capabilities=CAPABILITIES) as client:
        first = await client.call_tool("confirm", {"message": "delete A?"})
        accepted = {"confirmed": {"action": "accept", "content": {"name": "yes"}}}

        def retry(message: str) -> dict[str, Any]:
            arguments = {"message": message}
            return {"name": "confirm", "arguments": arguments, "requestState": first["requestState"]}

        other = await client.request_raw("tools/call", retry("delete B?") | {"inputResponses": accepted})
        assert other["error"]["code"] == -32602
        assert "belongs to another request" in other["error"]["message"]
        same = await client.request_raw("tools/call", retry("delete A?") | {"inputResponses": accepted})
        assert same["result"]["content"][0]["text"] == "delete A? -> accept"


async def test_modern_era_state_expires() -> None:
    server = build()
    now = [1_000.0]
    server.clock = lambda: now[0]
    async with connect(server, modern=True, capabilities=CAPABILITIES) as client:
        first = await client.call_tool("two_steps")
        answers = {"step1": {"action": "accept", "content": {"name": "Dee"}}}
        retry = {
            "name": "two_steps",
            "arguments": {},
            "requestState": first["requestState"],
            "inputResponses": answers,
        }
        now[0] += server.request_state_ttl - 1
        assert (await client.request_raw("tools/call", retry))["result"]["resultType"] == "input_required"
        now[0] += 2  # past the ttl of the state minted at the start
        expired = await client.request_raw("tools/call", retry)
        assert expired["error"]["code"] == -32602
        assert "expired" in expired["error"]["message"]


async def test_modern_era_missing_capability_is_a_protocol_error() -> None:
    async with connect(build(), modern=True, capabilities={"sampling": {}}) as client:
        response = await client.request_raw("tools/call", {"name": "greet", "arguments": {}})
        assert response["error"]["code"] == -32021
        assert response["error"]["data"]["requiredCapabilities"] == {"elicitation": {}}
