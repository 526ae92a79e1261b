"""A full disk under a SQLite store: the sessions a server has go on being served.

Reading a session needs no write, so on a full disk every request on a session is still
answered, and its streams go on (an event the log cannot keep goes out without an id).
What cannot be done without a write (a new session, a new job, ending a session) is
refused with a JSON-RPC error that says to try again, and each kind of refusal is logged
once, not once per request. When the disk has room again, so does the server.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from giftgenius.app import CATALOG_URI
from herald.stores.sqlite import SqliteEventLog, SqliteJobStore, SqliteSessionStore
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from herald.transports.http.sessions import REVALIDATE_SECONDS
from tests.messages import INITIALIZED, POST_HEADERS, initialize
from tests.servers import giftgenius_http
from tests.small_disk import fill, small_disk
from tests.transports.http.conftest import EventReader, build_server

pytestmark = pytest.mark.slow

VERSION = "2025-06-18"
LISTEN = {"accept": "text/event-stream"}


def rpc(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


async def open_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """A session made before the disk fills; the headers of every request on it."""
    response = await client.post(url, json=initialize(VERSION), headers=POST_HEADERS)
    assert response.status_code == 200, response.text
    headers = {
        **POST_HEADERS,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": VERSION,
    }
    assert (await client.post(url, json=INITIALIZED, headers=headers)).status_code == 202
    return headers


async def answer(client: httpx.AsyncClient, url: str, headers: dict[str, str], body: Any) -> dict[str, Any]:
    response = await client.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


async def still_open(response: httpx.Response) -> bool:
    """Whether the server keeps the stream open: reading it waits instead of ending."""
    try:
        await asyncio.wait_for(anext(response.aiter_raw()), 0.5)
    except TimeoutError:
        return True
    except (StopAsyncIteration, httpx.HTTPError):
        return False
    return True  # it said something, so it was open


async def test_a_full_disk_serves_the_sessions_a_server_has(tmp_path: Path) -> None:
    with small_disk() as disk, (tmp_path / "stderr.txt").open("w+b") as said:
        with giftgenius_http(f"sqlite:///{disk / 'store.db'}", stderr=said.fileno()) as served:
            url = served.url
            async with httpx.AsyncClient(timeout=10) as client:
                headers = await open_session(client, url)
                filler = fill(disk)
                get_headers = {**LISTEN, "mcp-session-id": headers["mcp-session-id"]}
                async with client.stream("GET", url, headers=get_headers) as listening:
                    assert listening.status_code == 200
                    assert listening.headers["content-type"].startswith("text/event-stream")
                    # Long enough that the server asks the store for the session again and again,
                    # and each time the store cannot extend its life.
                    request_id = 10
                    deadline = time.monotonic() + 3 * REVALIDATE_SECONDS
                    while time.monotonic() < deadline:
                        for method, params in (
                            ("ping", None),
                            ("tools/list", None),
                            ("resources/read", {"uri": CATALOG_URI}),
                        ):
                            request_id += 1
                            reply = await answer(client, url, headers, rpc(request_id, method, params))
                            assert "result" in reply, reply
                    # A change to the session is made, and saved once there is room.
                    reply = await answer(client, url, headers, rpc(1, "logging/setLevel", {"level": "debug"}))
                    assert reply["result"] == {}
                    # A job cannot be started without a write: the client is told to try again.
                    start = rpc(
                        2,
                        "tools/call",
                        {"name": "start_bulk_gift_analysis", "arguments": {"csv": "name\nAda\n"}},
                    )
                    error = (await answer(client, url, headers, start))["error"]
                    assert error["code"] == -32603
                    assert "did not start the job" in error["message"]
                    assert "again" in error["message"]
                    # Neither can a new session, nor the end of this one.
                    refused = await client.post(
                        url, json=initialize(VERSION, request_id=3), headers=POST_HEADERS
                    )
                    assert refused.status_code == 503
                    assert "retry-after" in refused.headers
                    assert refused.json()["id"] == 3
                    assert "could not start a session" in refused.json()["error"]["message"]
                    ending = await client.delete(url, headers=headers)
                    assert ending.status_code == 503
                    assert "could not end the session" in ending.json()["error"]["message"]
                    assert "result" in await answer(client, url, headers, rpc(4, "ping"))  # it goes on
                    assert await still_open(listening)
                filler.unlink()  # room again
                again = await client.post(url, json=initialize(VERSION, request_id=5), headers=POST_HEADERS)
                assert again.status_code == 200
                assert "mcp-session-id" in again.headers
                assert (await client.delete(url, headers=headers)).status_code == 200
        said.seek(0)
        log = said.read().decode()
    assert "Traceback" not in log
    assert log.count("could not extend sessions' lives") == 1, log


async def test_streams_go_on_when_the_event_log_is_full() -> None:
    """Every SSE event goes to the log before the client: one the log refuses goes out without an id."""
    with small_disk() as disk:
        path = disk / "store.db"
        server = build_server()
        server.use_job_store(SqliteJobStore(path))
        config = HttpConfig(session_ttl=60, keepalive_interval=0.2)
        async with (
            serve_http(server, config, SqliteEventLog(path), SqliteSessionStore(path)) as (url, _),
            httpx.AsyncClient(timeout=10) as client,
        ):
            headers = await open_session(client, url)
            subscribe = rpc(1, "resources/subscribe", {"uri": "demo://note"})
            assert (await answer(client, url, headers, subscribe))["result"] == {}
            get_headers = {**LISTEN, "mcp-session-id": headers["mcp-session-id"]}
            async with client.stream("GET", url, headers=get_headers) as listening:
                fill(disk)
                steps = rpc(
                    2,
                    "tools/call",
                    {"name": "steps", "arguments": {"count": 3}, "_meta": {"progressToken": 7}},
                )
                response = await client.post(url, json=steps, headers=headers)
                assert response.headers["content-type"].startswith("text/event-stream")
                events = [event for event in await EventReader(response).take() if event.data]
                messages = [orjson.loads(event.data) for event in events]
                assert [message.get("method") for message in messages] == [
                    *["notifications/progress"] * 3,
                    None,
                ]
                assert messages[-1]["result"]["content"][0]["text"] == "done 3"
                assert all(not event.id for event in events), "the log kept none of them: none can be resumed"
                server.notify_resource_updated("demo://note")
                heard = EventReader(listening)
                while (event := await asyncio.wait_for(heard.next(), 5)) is not None and not event.data:
                    pass  # keep-alives
                assert event is not None
                assert orjson.loads(event.data)["method"] == "notifications/resources/updated"
