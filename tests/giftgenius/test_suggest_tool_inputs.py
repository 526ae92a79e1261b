"""No argument a client can send to suggest_gifts gets a JSON-RPC internal error.

Every answer is either suggestions within the budget or a tool error (`isError`) whose text says
what to change. Arguments go over the same byte path a transport uses, encoded here with the
standard library so values orjson would refuse to send (NaN, integers past 64 bits) still reach
the server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from giftgenius.app import build_server
from herald.protocol.modern import with_envelope
from herald.testing import connect

_REQUEST_ID = "fuzz"
_PARSE_ERROR = -32700

_TEXT = st.one_of(
    st.sampled_from(
        ["", " ", "\t\n", "\x1c", "\x85", "\ufeff", "\u3000", "\u200b", "🎉", "!!!", "NaN", "birthday"]
    ),
    st.sampled_from([" Baby shower ", "xmas", "Quinceañera", "retirement"]),
    st.text(max_size=40),
)
_RECIPIENTS = st.one_of(
    _TEXT,
    st.sampled_from(
        [
            "my dad who likes fishing",
            "someone who hates board games",
            "hates board games but loves puzzles",
            "no-nonsense cook, no alcohol",
            "a toddler who loves golf",
            "loves origami",
        ]
    ),
)
_NUMBERS = st.one_of(
    st.floats(),  # NaN, infinities, -0.0, subnormals and huge values included
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 0.001, 0.0099, 0.01, 5e-324, 1e308, 4.99, 20, 21, 50, 250]),
)
_JUNK = st.recursive(
    st.none() | st.booleans() | _NUMBERS | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_FITTING = {
    "occasion": _TEXT,
    "budget": _NUMBERS,
    "recipient": _RECIPIENTS,
    "count": st.integers(min_value=-3, max_value=25) | st.floats(min_value=0, max_value=25),
}


@st.composite
def _arguments(draw: st.DrawFn) -> dict[str, Any]:
    """Each field well typed most of the time, else of any JSON type or missing; sometimes extras."""
    arguments: dict[str, Any] = {}
    for name, fitting in _FITTING.items():
        choice = draw(st.sampled_from(["fitting", "fitting", "fitting", "junk", "missing"]))
        if choice == "fitting":
            arguments[name] = draw(fitting)
        elif choice == "junk":
            arguments[name] = draw(_JUNK)
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        arguments.update(draw(st.dictionaries(st.text(max_size=8), _JUNK, min_size=1, max_size=2)))
    return arguments


async def _call(arguments: dict[str, Any], modern: bool) -> dict[str, Any]:
    """The whole response to one tools/call, sent as raw bytes."""
    async with connect(build_server(), modern=modern) as client:
        params: dict[str, Any] = {"name": "suggest_gifts", "arguments": arguments}
        if modern:
            params = with_envelope(params, capabilities={})
        client.drop_frames()
        frame = {"jsonrpc": "2.0", "id": _REQUEST_ID, "method": "tools/call", "params": params}
        client.send_raw(json.dumps(frame, allow_nan=True).encode())
        while True:
            reply = await client.next_frame()
            # A parse error cannot know the request's id, so it answers with null.
            if isinstance(reply, dict) and reply.get("id") in (_REQUEST_ID, None) and "method" not in reply:
                return reply


def _is_strict_json(arguments: dict[str, Any]) -> bool:
    try:
        json.dumps(arguments, allow_nan=False)
    except ValueError:
        return False
    return True


def _check_suggestions(result: dict[str, Any], arguments: dict[str, Any]) -> None:
    gifts = result["structuredContent"]["gifts"]
    assert len(gifts) <= arguments.get("count", 5)
    assert all(gift["price"] <= arguments["budget"] for gift in gifts)
    assert result["content"][0]["text"]


def _check_tool_error(result: dict[str, Any]) -> None:
    message = result["content"][0]["text"]
    assert message.strip()
    # herald's catch-alls for a tool that raised or broke its outputSchema: never an answer to input.
    assert "internal error" not in message
    assert "outputSchema" not in message
    assert any(word in message for word in ("occasion", "budget", "recipient", "count", "argument")), message


@settings(max_examples=200, deadline=None)
@given(arguments=_arguments(), modern=st.booleans())
@pytest.mark.slow
def test_every_argument_gets_a_result_or_an_actionable_tool_error(
    arguments: dict[str, Any], modern: bool
) -> None:
    response = asyncio.run(_call(arguments, modern))
    if not _is_strict_json(arguments):
        # NaN and Infinity are not JSON: the frame is refused before any tool sees it.
        assert response["error"]["code"] == _PARSE_ERROR, response
        return
    assert "error" not in response, response
    result = response["result"]
    if result.get("isError"):
        _check_tool_error(result)
    else:
        _check_suggestions(result, arguments)
