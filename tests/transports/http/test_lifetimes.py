"""Nothing an HTTP exchange starts outlives it, and every exchange ends.

Finished SSE streams are not held by their session, an abandoned 2026-07-28 stream leaves
no pump behind, a cancelled request or a deleted session ends its POST, a 2026-07-28
notification is accepted without a session, and a listener that stops reading is cut off
instead of growing the server's memory.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from typing import Any

import httpx
import orjson
import pytest

from herald.protocol.messages import Notification
from herald.stores.memory import MemoryEventLog
from herald.transports.http.sessions import RESUMABLE_FINISHED_STREAMS
from herald.transports.http.streams import DurableStream
from herald.transports.http.unread import MAX_UNREAD_FRAMES
from tests.messages import INITIALIZE
from tests.servers import giftgenius_http
from tests.transports.http.conftest import CANCELLED, HEADERS, STARTED, Running, event, read_events
from tests.transports.http.test_modern_http import body as modern_body
from tests.transports.http.test_modern_http import headers as modern_headers


def call(name: str, arguments: dict[str, Any], request_id: int, token: int | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def pumps() -> list[asyncio.Task[Any]]:
    """Stream pumps still alive in this loop (the server runs in it)."""
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done() and getattr(task.get_coro(), "__qualname__", "") == "DurableStream._run"
    ]


async def test_finished_streams_are_not_held_by_the_session(running: Running) -> None:
    session_id = await running.initialize()
    session = running.app.state.sessions.held(session_id)
    for request_id in range(1, 21):
        response = await running.post(
            call("steps", {"count": 3}, request_id, token=request_id), **{"mcp-session-id": session_id}
        )
        assert response.headers["content-type"].startswith("text/event-stream")
        assert orjson.loads(response.text.rsplit("data: ", 1)[1])["result"]["content"][0]["text"] == "done 3"
    async with asyncio.timeout(5):
        while session.streams:  # noqa: ASYNC110  # the pump forgets its stream right after the reply
            await asyncio.sleep(0.01)
    assert session.streams == {}
    assert pumps() == []


async def test_a_finished_stream_is_still_resumed_from_the_log(running: Running) -> None:
    session_id = await running.initialize()
    response = await running.post(call("steps", {"count": 2}, 5, token=5), **{"mcp-session-id": session_id})
    events = await read_events(response)
    first_id = next(item.id for item in events if item.id and item.data)
    resumed = await running.client.get(
        running.url,
        headers={"accept": "text/event-stream", "mcp-session-id": session_id, "last-event-id": first_id},
    )
    replayed = [orjson.loads(item.data) for item in await read_events(resumed) if item.data]
    assert replayed[-1]["id"] == 5  # what came after the first event, the reply last


async def test_abandoned_modern_streams_leave_no_pumps(running: Running) -> None:
    for number in range(10):
        gate = f"abandoned-{number}"
        request = modern_body("tools/call", {"name": "report_then_wait", "arguments": {"gate": gate}}, number)
        request["params"]["_meta"]["progressToken"] = number
        async with running.client.stream(
            "POST",
            running.url,
            json=request,
            headers={**HEADERS, **modern_headers("tools/call", "report_then_wait")},
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            async with asyncio.timeout(5):
                await event(STARTED, gate).wait()
        # The client has closed the response: the request is cancelled and its pump ends.
        async with asyncio.timeout(5):
            await event(CANCELLED, gate).wait()
    async with asyncio.timeout(5):
        while pumps():  # noqa: ASYNC110  # the exchange awaits its pump as it ends
            await asyncio.sleep(0.01)
    assert pumps() == []


@pytest.mark.parametrize("tool", ["wait", "report_then_wait"])
async def test_a_cancelled_request_ends_its_post(running: Running, tool: str) -> None:
    session_id = await running.initialize()
    gate = f"cancel-{tool}"
    pending = asyncio.ensure_future(
        running.post(call(tool, {"gate": gate}, 9, token=9), **{"mcp-session-id": session_id})
    )
    async with asyncio.timeout(5):
        await event(STARTED, gate).wait()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    assert (await running.post(cancel, **{"mcp-session-id": session_id})).status_code == 202
    async with asyncio.timeout(5):
        response = await pending
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]
    assert all("id" not in message for message in messages), "a cancelled request gets no reply"
    assert event(CANCELLED, gate).is_set()


async def test_deleting_the_session_ends_its_posts(running: Running) -> None:
    session_id = await running.initialize()
    pending = asyncio.ensure_future(
        running.post(call("wait", {"gate": "deleted"}, 3), **{"mcp-session-id": session_id})
    )
    async with asyncio.timeout(5):
        await event(STARTED, "deleted").wait()
    deleted = await running.client.delete(running.url, headers={"mcp-session-id": session_id})
    assert deleted.status_code == 200
    async with asyncio.timeout(5):
        response = await pending
    assert response.status_code == 200
    assert event(CANCELLED, "deleted").is_set()


async def test_a_modern_notification_needs_no_session(running: Running) -> None:
    notification = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": modern_body("ping")["params"]["_meta"]},
    }
    response = await running.post(notification, **{"mcp-protocol-version": "2026-07-28"})
    assert response.status_code == 202
    assert response.content == b""
    bare = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert (await running.post(bare, **{"mcp-protocol-version": "2026-07-28"})).status_code == 202
    handshake = await running.post(bare)
    assert handshake.status_code == 400, "without a version, a notification still needs its session"


async def test_a_slow_listener_gets_everything_through_back_pressure() -> None:
    log = MemoryEventLog()
    async with asyncio.TaskGroup() as tasks:  # the stream's owner
        stream = DurableStream(log, "session", "p", spawn=tasks.create_task)
        live = stream.listen()
        stream.start()
        total = MAX_UNREAD_FRAMES * 3
        for number in range(total):
            stream.send(Notification("notifications/message", {"level": "info", "data": number}))
        received: list[int] = []
        async with asyncio.timeout(10):
            while len(received) < total:
                batch = await live.take()
                for frame in batch.split(b"\n\n")[:-1]:
                    received.append(orjson.loads(frame.split(b"data: ", 1)[1])["params"]["data"])
        assert received == list(range(total)), "a listener that keeps reading loses nothing"
        assert stream.listening
        await stream.aclose()


async def test_a_listener_that_stops_reading_is_cut_off_and_loses_nothing() -> None:
    log = MemoryEventLog()
    async with asyncio.TaskGroup() as tasks:  # the stream's owner
        stream = DurableStream(log, "session", "g", spawn=tasks.create_task)
        stream.stall_seconds = 0.05  # how long a listener may read nothing before it is cut off
        live = stream.listen()
        stream.start()
        total = MAX_UNREAD_FRAMES + 500
        for number in range(total):
            stream.send(Notification("notifications/message", {"level": "info", "data": number}))
        await stream.aclose()
        assert len(live) <= MAX_UNREAD_FRAMES, "the unread frames stay bounded"
        assert not stream.listening, "the slow listener was let go"
        stored = await log.read_after("session", "g", 0)
        assert [orjson.loads(item.data)["params"]["data"] for item in stored] == list(range(total))


@pytest.mark.slow
async def test_sigterm_stops_a_server_whose_streams_stay_open() -> None:
    """Open event streams never end by themselves; shutdown must not wait for them forever."""
    with giftgenius_http("memory", stderr=subprocess.PIPE) as served:
        async with httpx.AsyncClient(timeout=10) as client:
            answered = await client.post(served.url, json=INITIALIZE, headers=HEADERS)
            session = {"mcp-session-id": answered.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await client.post(served.url, json=initialized, headers={**HEADERS, **session})
            get = {"accept": "text/event-stream", **session}
            async with client.stream("GET", served.url, headers=get) as stream:
                assert stream.status_code == 200
                served.process.send_signal(signal.SIGTERM)
                # The bound is the server's shutdown timeout (5 s) plus start-up slack, not a measure.
                code = await asyncio.to_thread(served.process.wait, 20)
    # uvicorn re-raises the signal it handled once it has shut down, so the status names it.
    assert code in (0, -signal.SIGTERM)
    assert served.process.stderr is not None
    said = served.process.stderr.read().decode()
    assert "timeout graceful shutdown exceeded" in said  # the stream was cut, and that is said
    assert "Traceback" not in said  # but not as a crash


async def test_a_long_session_keeps_only_its_recent_finished_streams(running: Running) -> None:
    session_id = await running.initialize()
    first_ids: list[str] = []
    for request_id in range(1, RESUMABLE_FINISHED_STREAMS + 6):
        response = await running.post(
            call("steps", {"count": 1}, request_id, token=request_id), **{"mcp-session-id": session_id}
        )
        first_ids.append(next(item.id for item in await read_events(response) if item.id and item.data))

    async def replay(last_event_id: str) -> list[Any]:
        headers = {
            "accept": "text/event-stream",
            "mcp-session-id": session_id,
            "last-event-id": last_event_id,
        }
        resumed = await running.client.get(running.url, headers=headers)
        return [orjson.loads(item.data) for item in await read_events(resumed) if item.data]

    async with asyncio.timeout(5):  # pruning runs in a task of the session, after the stream ends
        while await replay(first_ids[0]):  # noqa: ASYNC110  # the log offers no signal
            await asyncio.sleep(0.01)
    assert await replay(first_ids[0]) == [], "the oldest finished streams are gone from the log"
    assert (await replay(first_ids[-1]))[-1]["id"] == len(first_ids), "recent ones still resume"
