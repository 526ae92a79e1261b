"""Params nested hundreds of levels deep get a clear invalid-params answer, never -32603.

orjson decodes up to 1024 levels, but jsonschema-rs (and orjson when it encodes) stop near
255: a deep value in tool arguments used to escape as an internal error with a traceback.
The frames are written by hand because the client's own encoder refuses such values.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from giftgenius.app import build_server
from herald.protocol.modern import with_envelope
from herald.protocol.validation import MAX_JSON_DEPTH
from herald.testing import InMemoryClient, connect

DEEP = "__deep__"
IDS = itertools.count(10_000)
ERAS = [
    pytest.param({"version": "2025-06-18"}, id="2025-06-18"),
    pytest.param({"version": "2025-11-25"}, id="2025-11-25"),
    pytest.param({"modern": True}, id="2026-07-28"),
]


@pytest.fixture(params=ERAS)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryClient]:
    async with connect(build_server(), **request.param) as connected:
        yield connected


def nested(depth: int) -> str:
    """JSON text of arrays nested `depth` levels deep."""
    return "[" * depth + "]" * depth


async def send_deep(client: InMemoryClient, method: str, params: dict[str, Any], depth: int) -> Any:
    """Send `params` with the string `DEEP` (wherever it is) replaced by a `depth`-deep array."""
    if client.modern:
        params = with_envelope(params, capabilities=client.capabilities)
    request_id = next(IDS)
    frame = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    client.drop_frames()
    client.send_raw(frame.replace(f'"{DEEP}"'.encode(), nested(depth).encode()))
    while True:
        message = await client.next_frame()
        if isinstance(message, dict) and message.get("id") == request_id:
            return message


def argument_error(client: InMemoryClient, response: dict[str, Any]) -> str:
    """The message of an invalid-arguments answer, in the form this era gives it."""
    session = client.connection.session
    if client.modern or (session is not None and session.protocol_version == "2025-11-25"):
        assert response["result"]["isError"] is True
        message: str = response["result"]["content"][0]["text"]
        return message
    assert response["error"]["code"] == -32602
    error: str = response["error"]["message"]
    return error


@pytest.mark.parametrize("depth", [256, 1000])
@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"x": DEEP}, id="unknown-argument"),
        pytest.param({"occasion": "birthday", "budget": 100, "recipient": DEEP}, id="typed-argument"),
    ],
)
async def test_deep_tool_arguments_are_invalid_arguments(
    client: InMemoryClient, arguments: dict[str, Any], depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        response = await send_deep(
            client, "tools/call", {"name": "suggest_gifts", "arguments": arguments}, depth
        )
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in argument_error(client, response)
    assert caplog.records == []


async def test_arguments_at_the_limit_are_validated_as_usual(client: InMemoryClient) -> None:
    arguments = {"occasion": "birthday", "budget": 100, "recipient": DEEP}
    response = await send_deep(
        client, "tools/call", {"name": "suggest_gifts", "arguments": arguments}, MAX_JSON_DEPTH - 1
    )
    message = argument_error(client, response)
    assert "nested" not in message
    assert "is not of type" in message


@pytest.mark.parametrize(
    ("method", "params"),
    [
        pytest.param(
            "tools/call", {"name": "suggest_gifts", "arguments": {}, "_meta": {"x": DEEP}}, id="meta"
        ),
        pytest.param(
            "prompts/get", {"name": "gift_congrats_style", "arguments": {"occasion": DEEP}}, id="prompt"
        ),
        pytest.param("resources/read", {"uri": DEEP}, id="uri"),
        pytest.param("tools/list", {"cursor": DEEP}, id="cursor"),
    ],
)
async def test_deep_values_elsewhere_stay_clean_errors(
    client: InMemoryClient, method: str, params: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        response = await send_deep(client, method, params, 256)
    if "error" in response:
        assert response["error"]["code"] == -32602
    else:  # a deep _meta is allowed; the call then fails on its missing arguments, as it should
        assert "required property" in argument_error(client, response)
    assert caplog.records == []


async def test_deep_task_params_are_invalid_params(caplog: pytest.LogCaptureFixture) -> None:
    async with connect(build_server()) as client:
        with caplog.at_level(logging.ERROR):
            for method in ("tasks/get", "tasks/cancel", "tasks/result"):
                response = await send_deep(client, method, {"taskId": DEEP}, 256)
                assert response["error"]["code"] == -32602
            listed = await send_deep(client, "tasks/list", {"cursor": DEEP}, 256)
            assert listed["error"]["code"] == -32602
        assert caplog.records == []
