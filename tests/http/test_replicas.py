"""Two replicas on one store: any of them serves any request of a handshake-era session.

Two herald servers, each with its own HTTP app, share a job store, an event log and a
session store (one SQLite file, or a private Redis), as replicas behind a load balancer
do. A session minted on one is served by the other; what the client changes on one holds
on the other; a job started on one streams its events on the other's GET stream, and a
client that loses that stream resumes on the first with `Last-Event-ID`, missing nothing
and seeing nothing twice. A DELETE on either ends the session on both.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from herald import Server
from herald.runtime import JobContext
from herald.stores.redis import RedisEventLog, RedisJobStore, RedisSessionStore
from herald.stores.sqlite import SqliteEventLog, SqliteJobStore, SqliteSessionStore
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.http.conftest import HEADERS, INIT_PARAMS, EventReader
from tests.redis_server import redis_server

_prefixes = itertools.count()


@dataclass
class Replica:
    server: Server
    url: str
    app: Any


@dataclass
class Replicas:
    a: Replica
    b: Replica
    client: httpx.AsyncClient
    go_on: asyncio.Event

    async def post(self, replica: Replica, body: Any, session_id: str | None = None) -> httpx.Response:
        headers = dict(HEADERS)
        if session_id is not None:
            headers["mcp-session-id"] = session_id
        return await self.client.post(replica.url, json=body, headers=headers)


def build_server(go_on: asyncio.Event) -> Server:
    server = Server("replicas")

    @server.job()
    async def five_steps(ctx: JobContext) -> dict[str, int]:
        """Five progress steps; after the second it waits for the test."""
        for step in range(1, 6):
            await ctx.report_progress(20 * step, f"step {step}")
            if step == 2:
                await go_on.wait()
        return {"steps": 5}

    @server.tool
    async def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.resource("demo://note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    return server


@pytest.fixture(params=["sqlite", "redis"])
async def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Replicas]:
    go_on = asyncio.Event()
    config = HttpConfig(session_ttl=60, keepalive_interval=0.2)
    with redis_server() if request.param == "redis" else _no_redis() as url:
        prefix = f"replicas{next(_prefixes)}"

        def stores() -> tuple[Any, Any, Any]:
            if url is None:
                path = tmp_path / "herald.db"
                return SqliteEventLog(path), SqliteJobStore(path), SqliteSessionStore(path)
            return (
                RedisEventLog.from_url(url, prefix=prefix),
                RedisJobStore.from_url(url, prefix=prefix),
                RedisSessionStore.from_url(url, prefix=prefix),
            )

        async with AsyncExitStack() as stack:
            served = []
            for _ in range(2):
                server = build_server(go_on)
                log, jobs, sessions = stores()
                server.use_job_store(jobs)
                url_, app = await stack.enter_async_context(serve_http(server, config, log, sessions))
                app.state.sessions.revalidate_seconds = 0.0  # ask the store on every request
                served.append(Replica(server, url_, app))
            client = await stack.enter_async_context(httpx.AsyncClient(timeout=10))
            yield Replicas(served[0], served[1], client, go_on)


class _no_redis:  # noqa: N801  # reads as the context manager it stands in for
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


def rpc(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


async def initialize(replicas: Replicas, on: Replica) -> str:
    answer = await replicas.post(on, rpc(0, "initialize", INIT_PARAMS))
    session_id: str = answer.headers["mcp-session-id"]
    return session_id


async def test_any_replica_serves_any_request_of_a_session(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    session_id = await initialize(replicas, a)
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await replicas.post(b, initialized, session_id)).status_code == 202
    echoed = await replicas.post(
        b, rpc(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}), session_id
    )
    assert echoed.json()["result"]["content"][0]["text"] == "hi"
    assert (await replicas.post(a, rpc(2, "logging/setLevel", {"level": "debug"}), session_id)).json()[
        "result"
    ] == {}
    subscribe = rpc(3, "resources/subscribe", {"uri": "demo://note"})
    assert (await replicas.post(b, subscribe, session_id)).json()["result"] == {}
    assert (await replicas.post(a, rpc(4, "ping"), session_id)).json()["result"] == {}
    on_a = a.app.state.sessions.held(session_id).connection.session
    assert on_a.log_level == "debug", "a change made on one replica"
    assert on_a.subscriptions == {"demo://note"}, "and another made on the other hold on both"
    assert on_a.protocol_version == INIT_PARAMS["protocolVersion"]
    assert b.app.state.sessions.held(session_id).connection.protocol.may_notify, "initialized holds on B"
    second = await replicas.post(b, rpc(5, "initialize", INIT_PARAMS), session_id)
    assert "already initialized" in second.json()["error"]["message"], "the handshake is not redone"

    deleted = await replicas.client.delete(b.url, headers={**HEADERS, "mcp-session-id": session_id})
    assert deleted.status_code == 200
    for replica in (a, b):
        gone = await replicas.post(replica, rpc(6, "ping"), session_id)
        assert gone.status_code == 404, "a DELETE on one replica ends the session on both"
    unknown = await replicas.post(b, rpc(7, "ping"), "no-such-session")
    assert unknown.status_code == 404


async def read_until(reader: EventReader, event_id: str) -> list[tuple[str | None, dict[str, Any]]]:
    seen: list[tuple[str | None, dict[str, Any]]] = []
    while not seen or seen[-1][0] != event_id:
        event = await reader.next()
        assert event is not None, f"the stream ended before {event_id}"
        if event.data:
            seen.append((event.id, orjson.loads(event.data)))
    return seen


@asynccontextmanager
async def get_stream(
    replicas: Replicas, on: Replica, session_id: str, last_event_id: str | None = None
) -> AsyncIterator[EventReader]:
    headers = {"accept": "text/event-stream", "mcp-session-id": session_id}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    async with replicas.client.stream("GET", on.url, headers=headers) as response:
        assert response.status_code == 200
        yield EventReader(response)


async def test_a_job_started_on_one_replica_streams_on_the_other_and_resumes_on_the_first(
    replicas: Replicas,
) -> None:
    a, b = replicas.a, replicas.b
    session_id = await initialize(replicas, a)
    await replicas.post(b, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
    started = await replicas.post(
        a, rpc(1, "tools/call", {"name": "five_steps", "arguments": {}}), session_id
    )
    job_id = started.json()["result"]["structuredContent"]["jobId"]
    async with asyncio.timeout(15):
        async with get_stream(replicas, b, session_id) as reader:
            # The job runs on A; B catches up on what it said before the GET, then relays the rest.
            first = await read_until(reader, f"{job_id}:4")
        replicas.go_on.set()  # the job goes on while the client has no stream open anywhere
        async with get_stream(replicas, a, session_id, last_event_id=f"{job_id}:4") as reader:
            rest = await read_until(reader, f"{job_id}:8")
    job_events = [(event_id, message) for event_id, message in first + rest if event_id and ":" in event_id]
    assert [event_id for event_id, _ in job_events] == [f"{job_id}:{n}" for n in range(1, 9)], (
        "every event of the job once, in order, across the two replicas"
    )
    assert job_events[-1][1]["method"] == "notifications/job/completed"
    percentages = [
        m["params"]["percentage"] for _, m in job_events if m["method"] == "notifications/job/progress"
    ]
    assert percentages == [20, 40, 60, 80, 100]
