"""Streamable HTTP, handshake era: sessions, status codes, streams, resumption."""

from __future__ import annotations

import asyncio
import re

import orjson
import pytest

from tests.transports.http.conftest import (
    GATES,
    HEADERS,
    INIT_PARAMS,
    STARTED,
    EventReader,
    Running,
    event,
    read_events,
)

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}


async def test_initialize_mints_a_session(running: Running) -> None:
    response = await running.post(INITIALIZE)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"
    session_id = response.headers["mcp-session-id"]
    assert re.fullmatch(r"[\x21-\x7e]{32,}", session_id), "visible ASCII, at least 128 bits of entropy"
    other = (await running.post(INITIALIZE)).headers["mcp-session-id"]
    assert other != session_id


async def test_session_rules(running: Running) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}},
    }
    missing = await running.post(call)
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == -32600
    assert "Mcp-Session-Id" in missing.json()["error"]["message"]
    unknown = await running.post(call, **{"mcp-session-id": "nope"})
    assert unknown.status_code == 404
    session_id = await running.initialize()
    ok = await running.post(call, **{"mcp-session-id": session_id})
    assert ok.json()["result"]["content"][0]["text"] == "x"
    deleted = await running.client.delete(running.url, headers={"mcp-session-id": session_id})
    assert deleted.status_code == 200
    gone = await running.post(call, **{"mcp-session-id": session_id})
    assert gone.status_code == 404
    assert len(running.app.state.sessions) == 0


async def test_notifications_get_202(running: Running) -> None:
    session_id = await running.initialize()
    response = await running.post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, **{"mcp-session-id": session_id}
    )
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"accept": "application/json"}, 406),
        ({"accept": "text/event-stream"}, 406),
        ({"content-type": "text/plain"}, 415),
        ({"host": "evil.example.com"}, 403),
        ({"origin": "http://evil.example.com"}, 403),
    ],
)
async def test_refusals_have_readable_json_rpc_bodies(
    running: Running, headers: dict[str, str], status: int
) -> None:
    response = await running.client.post(
        running.url, content=orjson.dumps(INITIALIZE), headers={**HEADERS, **headers}
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == -32600
    assert len(error["message"]) > 20


async def test_local_origin_is_allowed(running: Running) -> None:
    port = running.url.split(":")[2].split("/")[0]
    response = await running.post(INITIALIZE, origin=f"http://localhost:{port}")
    assert response.status_code == 200


async def test_oversize_body_is_413_and_the_server_goes_on(running: Running) -> None:
    session_id = await running.initialize()
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x" * 20_000}},
    }
    response = await running.post(big, **{"mcp-session-id": session_id})
    assert response.status_code == 413
    assert "limit" in response.json()["error"]["message"]
    small = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert (await running.post(small, **{"mcp-session-id": session_id})).json()["result"] == {}


async def test_protocol_version_header(running: Running) -> None:
    session_id = await running.initialize()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    absent = await running.post(ping, **{"mcp-session-id": session_id})
    assert absent.status_code == 200
    older = await running.post(ping, **{"mcp-session-id": session_id, "mcp-protocol-version": "2025-03-26"})
    assert older.status_code == 200
    unknown = await running.post(ping, **{"mcp-session-id": session_id, "mcp-protocol-version": "1999-01-01"})
    assert unknown.status_code == 400
    assert "1999-01-01" in unknown.json()["error"]["message"]


async def test_parse_error_is_400(running: Running) -> None:
    response = await running.client.post(running.url, content=b"{nope", headers=HEADERS)
    assert response.status_code == 400
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": response.json()["error"]}
    assert response.json()["error"]["code"] == -32700


async def test_progress_streams_with_priming_and_ids(running: Running) -> None:
    session_id = await running.initialize()
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "steps", "arguments": {"count": 3}, "_meta": {"progressToken": "p"}},
    }
    async with running.client.stream(
        "POST", running.url, json=call, headers={**HEADERS, "mcp-session-id": session_id}
    ) as response:
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["x-accel-buffering"] == "no"
        events = await read_events(response)
    priming, *rest = events
    assert priming.data == ""
    assert priming.id is not None
    assert priming.retry == 1000
    messages = [orjson.loads(event.data) for event in rest]
    assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
    assert messages[-1]["id"] == 7
    assert len({event.id for event in events}) == len(events), "every event has its own id"


async def test_no_priming_before_2025_11_25(running: Running) -> None:
    session_id = await running.initialize("2025-06-18")
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "steps", "arguments": {"count": 1}, "_meta": {"progressToken": "p"}},
    }
    async with running.client.stream(
        "POST", running.url, json=call, headers={**HEADERS, "mcp-session-id": session_id}
    ) as response:
        events = await read_events(response)
    assert all(event.data for event in events)
    assert all(event.id for event in events)


async def test_closed_stream_resumes_with_last_event_id(running: Running) -> None:
    session_id = await running.initialize()
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "interrupted", "arguments": {}, "_meta": {"progressToken": "r"}},
    }
    async with running.client.stream(
        "POST", running.url, json=call, headers={**HEADERS, "mcp-session-id": session_id}
    ) as response:
        first = await read_events(response)
    assert "id" not in orjson.loads(first[-1].data), "the stream closed before the result"
    last_id = first[-1].id
    assert last_id is not None
    resume_headers = {"accept": "text/event-stream", "mcp-session-id": session_id, "last-event-id": last_id}
    async with running.client.stream("GET", running.url, headers=resume_headers) as response:
        assert response.status_code == 200
        rest = await read_events(response, until_id=9)
    messages = [orjson.loads(event.data) for event in rest]
    assert messages[0]["params"]["progress"] == 2
    assert messages[-1]["result"]["content"][0]["text"] == "finished after the stream closed"
    # Another session presenting the same event id gets nothing of this one.
    other = await running.initialize()
    async with running.client.stream(
        "GET", running.url, headers={**resume_headers, "mcp-session-id": other}
    ) as response:
        assert await read_events(response) == []


async def test_standalone_stream_carries_list_changes(running: Running) -> None:
    session_id = await running.initialize()
    headers = {"accept": "text/event-stream", "mcp-session-id": session_id}
    async with running.client.stream("GET", running.url, headers=headers) as response:
        assert response.status_code == 200
        second = await running.client.get(running.url, headers=headers)
        assert second.status_code == 409
        running.server.remove_tool("echo")
        decoder_events = await read_events(response, limit=1)
    assert orjson.loads(decoder_events[0].data)["method"] == "notifications/tools/list_changed"


async def test_elicitation_goes_out_on_the_call_stream(running: Running) -> None:
    session_id = await running.initialize()
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "ask_name", "arguments": {}},
    }
    async with running.client.stream(
        "POST", running.url, json=call, headers={**HEADERS, "mcp-session-id": session_id}
    ) as response:
        reader = EventReader(response)
        events = await reader.take(limit=2)
        request = orjson.loads(events[-1].data)
        assert request["method"] == "elicitation/create"
        answer = {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }
        accepted = await running.post(answer, **{"mcp-session-id": session_id})
        assert accepted.status_code == 202
        rest = await reader.take(until_id=3)
    assert orjson.loads(rest[-1].data)["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_concurrent_streams_in_one_session(running: Running) -> None:
    session_id = await running.initialize()

    async def call(number: int) -> str:
        body = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {"gate": str(number)}},
        }
        response = await running.post(body, **{"mcp-session-id": session_id})
        return str(response.json()["result"]["content"][0]["text"])

    calls = [asyncio.ensure_future(call(number)) for number in range(3)]
    async with asyncio.timeout(10):
        for number in range(3):
            await event(STARTED, str(number)).wait()  # all three run at once in one session
    for number in range(3):
        event(GATES, str(number)).set()
    assert sorted(await asyncio.gather(*calls)) == ["opened 0", "opened 1", "opened 2"]


async def test_idle_sessions_expire(running: Running) -> None:
    registry = running.app.state.sessions
    session_id = await running.initialize()
    now = [1000.0]
    registry.clock = lambda: now[0]
    await registry.get(session_id)
    now[0] += registry.ttl - 1
    assert await registry.expire_idle() == 0
    now[0] += 2
    assert await registry.expire_idle() == 1
    ping = await running.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, **{"mcp-session-id": session_id})
    assert ping.status_code == 404


async def test_idle_streams_get_keepalive_comments(running: Running) -> None:
    session_id = await running.initialize()
    headers = {"accept": "text/event-stream", "mcp-session-id": session_id}
    async with running.client.stream("GET", running.url, headers=headers) as response:
        chunks = response.aiter_bytes()
        first = await anext(chunks)  # the fixture's interval is 0.2 s
    assert first == b": keep-alive\n\n"
