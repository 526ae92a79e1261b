"""JSON-RPC batches over Streamable HTTP are answered as over stdio, and every exchange ends.

The sans-IO connection decides what a batch gets (`reply_ids`, `refused_whole`); stdio
writes that answer as a line and HTTP as one JSON body. Input of which nothing could be
taken in (a batch where the version has none, a batch of entries that are no messages)
is answered 400, as the transport answers every body it cannot accept.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from herald.server.app import Server
from herald.testing import connect
from tests.transports.http.conftest import Running

PING = {"jsonrpc": "2.0", "id": "a", "method": "ping"}
ECHO = {
    "jsonrpc": "2.0",
    "id": "b",
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "x"}},
}
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
#: Entries that are no JSON-RPC message at all (JSON-RPC 2.0 §6 answers each with an error).
NO_MESSAGES = [1, {"id": 2}, {"jsonrpc": "2.0", "id": 3, "method": 5}]


async def stdio_answer(server: Server, version: str, batch: list[Any]) -> Any:
    """What a client of `version` hears for `batch` through the connection stdio serves with."""
    async with connect(server, version=version) as client:
        client.drop_frames()
        client.send_raw(orjson.dumps(batch))
        return await client.next_frame()


async def post_batch(running: Running, version: str, batch: list[Any]) -> Any:
    session_id = await running.initialize(version)
    async with asyncio.timeout(5):  # the exchange ends by itself
        return await running.post(batch, **{"mcp-session-id": session_id, "mcp-protocol-version": version})


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
@pytest.mark.parametrize("batch", [[PING, ECHO], [NOTIFICATION]], ids=["requests", "notifications"])
async def test_a_batch_where_the_version_has_none_gets_one_error(
    running: Running, version: str, batch: list[Any]
) -> None:
    response = await post_batch(running, version, batch)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    error = response.json()
    assert error["id"] is None
    assert error["error"]["code"] == -32600
    assert "batch" in error["error"]["message"]
    assert error == await stdio_answer(running.server, version, batch)


async def test_a_batch_of_no_messages_gets_an_error_for_each(running: Running) -> None:
    response = await post_batch(running, "2025-03-26", NO_MESSAGES)
    assert response.status_code == 400
    errors = response.json()
    assert [error["error"]["code"] for error in errors] == [-32600] * len(NO_MESSAGES)
    assert errors == await stdio_answer(running.server, "2025-03-26", NO_MESSAGES)


async def test_a_batch_on_a_2025_03_26_session_is_answered_with_one_array(running: Running) -> None:
    batch = [PING, ECHO, NOTIFICATION, {"jsonrpc": "2.0", "id": "c"}]
    response = await post_batch(running, "2025-03-26", batch)
    assert response.status_code == 200
    replies = response.json()
    assert [reply["id"] for reply in replies] == ["a", "b", "c"]
    assert replies[1]["result"]["content"][0]["text"] == "x"
    assert replies[2]["error"]["code"] == -32600
    assert replies == await stdio_answer(running.server, "2025-03-26", batch)


async def test_a_batch_of_notifications_on_a_2025_03_26_session_is_accepted(running: Running) -> None:
    response = await post_batch(running, "2025-03-26", [NOTIFICATION, NOTIFICATION])
    assert response.status_code == 202
    assert response.content == b""
