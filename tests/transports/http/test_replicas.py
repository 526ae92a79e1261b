"""Two replicas on one store: any of them serves any request, in both eras.

Two herald servers, each with its own HTTP app, share a job store, an event log and a
session store (one SQLite file, or a private Redis), as replicas behind a load balancer
do. A session minted on one is served by the other; what the client changes on one holds
on the other; a job started on one streams its events on the other's GET stream, and a
client that loses that stream resumes on the first with `Last-Event-ID`, missing nothing
and seeing nothing twice. A DELETE on either ends the session on both. Notifications sent
on one replica reach streams open on the other (the GET stream, `subscriptions/listen`),
a 2026-07-28 `requestState` minted on one opens on the other, and a task running on one
takes the input a client gives it through the other.
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

from herald import Context, Server
from herald.runtime import JobContext
from herald.stores.redis import RedisEventLog, RedisJobStore, RedisSessionStore
from herald.stores.sqlite import SqliteEventLog, SqliteJobStore, SqliteSessionStore
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.redis_server import redis_server
from tests.transports.http.conftest import HEADERS, INIT_PARAMS, EventReader

pytestmark = pytest.mark.slow  # replica processes on a shared store

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

    @server.tool
    async def greet(ctx: Context) -> str:
        """Asks for a name first (a 2026-07-28 round trip, whose state is sealed)."""
        answer = await ctx.elicit("Name?", NAME, key="who")
        return f"Hello, {answer['content']['name']}!"

    @server.tool(task_support="required")
    async def greet_later(ctx: Context) -> str:
        """The same inside a task: the name waits for `tasks/update`."""
        answer = await ctx.elicit("Name?", NAME, key="who")
        return f"Hello later, {answer['content']['name']}!"

    return server


NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.fixture(params=["sqlite", "redis"])
async def replicas(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Replicas]:
    monkeypatch.delenv("HERALD_STATE_KEY", raising=False)  # each server makes its own key
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


async def initialize_across(replicas: Replicas) -> str:
    """A session minted on A, whose `notifications/initialized` goes to B."""
    session_id = await initialize(replicas, replicas.a)
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await replicas.post(replicas.b, initialized, session_id)).status_code == 202
    return session_id


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
    session_id = await initialize_across(replicas)
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
        "every event of the job once, in order, across the two replicas",
        [event_id for event_id, _ in first],
        [event_id for event_id, _ in rest],
    )
    assert job_events[-1][1]["method"] == "notifications/job/completed"
    percentages = [
        m["params"]["percentage"] for _, m in job_events if m["method"] == "notifications/job/progress"
    ]
    assert percentages == [20, 40, 60, 80, 100]


async def test_a_notification_sent_on_one_replica_reaches_the_get_stream_on_the_other(
    replicas: Replicas,
) -> None:
    a, b = replicas.a, replicas.b
    session_id = await initialize_across(replicas)
    async with asyncio.timeout(15), get_stream(replicas, b, session_id) as reader:
        # Subscribed through A while the stream is open on B: B's copy hears of the change.
        subscribed = await replicas.post(a, rpc(1, "resources/subscribe", {"uri": "demo://note"}), session_id)
        assert subscribed.json()["result"] == {}
        assert replicas.a.server.notifications.relay is not None
        copy_on_b = b.app.state.sessions.held(session_id).connection.session
        while copy_on_b.subscriptions != {"demo://note"}:  # noqa: ASYNC110  # until B hears A's message
            await asyncio.sleep(0.01)
        a.server.notify_resource_updated("demo://other")  # not subscribed: not delivered
        a.server.notify_resource_updated("demo://note")
        a.server.remove_tool("echo")  # notifications/tools/list_changed
        heard: list[dict[str, Any]] = []
        while len(heard) < 2:
            event = await reader.next()
            assert event is not None
            if event.data:
                heard.append(orjson.loads(event.data))
    assert [message["method"] for message in heard] == [
        "notifications/resources/updated",
        "notifications/tools/list_changed",
    ], "each once, in order, and nothing the session did not subscribe to"
    assert heard[0]["params"]["uri"] == "demo://note"


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    },
}


def modern_request(
    request_id: int, method: str, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": MODERN_META}}
    headers = {**HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    name = params.get("name", params.get("taskId"))  # what the request names, mirrored
    if name is not None:
        headers["mcp-name"] = name
    return body, headers


async def modern(replicas: Replicas, on: Replica, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body, headers = modern_request(1, method, params)
    answer = (await replicas.client.post(on.url, json=body, headers=headers)).json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


async def test_subscriptions_listen_on_one_replica_hears_what_happens_on_the_other(
    replicas: Replicas,
) -> None:
    a, b = replicas.a, replicas.b
    started = await modern(replicas, a, "tools/call", {"name": "five_steps", "arguments": {}})
    job_id = started["taskId"]  # the client declares tasks: the job is answered as its task
    wanted = {
        "io.herald/jobEvents": {"jobIds": [job_id]},
        "resourceSubscriptions": ["demo://note"],
        "toolsListChanged": True,
    }
    body, headers = modern_request(9, "subscriptions/listen", {"notifications": wanted})
    async with (
        asyncio.timeout(15),
        replicas.client.stream("POST", b.url, json=body, headers=headers) as response,
    ):
        reader = EventReader(response)
        ack = orjson.loads((await reader.take(limit=1))[0].data)
        assert ack["params"]["notifications"] == wanted
        replicas.go_on.set()
        heard: list[dict[str, Any]] = []
        while not heard or heard[-1]["method"] != "notifications/job/completed":
            heard.extend(orjson.loads(frame.data) for frame in await reader.take(limit=1))
        a.server.notify_resource_updated("demo://note")
        a.server.remove_tool("echo")
        heard.extend(orjson.loads(frame.data) for frame in await reader.take(limit=2))
    job_events = [message for message in heard if message["method"].startswith("notifications/job/")]
    assert [message["params"]["jobId"] for message in job_events] == [job_id] * 8
    assert [message["params"]["eventId"] for message in job_events] == [
        f"{job_id}:{n}" for n in range(1, 9)
    ], "the job's events, run on A, once each and in order on B (those before the listen replayed)"
    assert [message["method"] for message in heard[-2:]] == [
        "notifications/resources/updated",
        "notifications/tools/list_changed",
    ]
    subscription_ids = {
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] for message in heard
    }
    assert subscription_ids == {9}


async def test_a_request_state_minted_on_one_replica_opens_on_the_other(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    assert a.server.state_key == b.server.state_key, "the replicas adopted the store's key"
    first = await modern(replicas, a, "tools/call", {"name": "greet", "arguments": {}})
    assert first["resultType"] == "input_required"
    answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    done = await modern(
        replicas,
        b,
        "tools/call",
        {"name": "greet", "arguments": {}, "inputResponses": answer, "requestState": first["requestState"]},
    )
    assert done["content"][0]["text"] == "Hello, Ada!"


async def test_a_task_running_on_one_replica_takes_input_given_through_the_other(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    created = await modern(replicas, a, "tools/call", {"name": "greet_later", "arguments": {}})
    task_id = created["taskId"]
    assert task_id in a.server.tasks.inputs, "it runs on A"
    assert task_id not in b.server.tasks.inputs
    async with asyncio.timeout(15):
        task = await poll_task(replicas, b, task_id, "input_required")
        assert task["inputRequests"]["who"]["method"] == "elicitation/create", "B reads what A waits on"
        answer = {"who": {"action": "accept", "content": {"name": "Grace"}}}
        await modern(replicas, b, "tasks/update", {"taskId": task_id, "inputResponses": answer})
        task = await poll_task(replicas, b, task_id, "completed")
    assert task["result"]["content"][0]["text"] == "Hello later, Grace!"


async def poll_task(replicas: Replicas, on: Replica, task_id: str, until: str) -> dict[str, Any]:
    """`tasks/get` on `on` every 20 ms, as a client polls a task, until it reaches `until`."""
    while True:
        task = await modern(replicas, on, "tasks/get", {"taskId": task_id})
        if task["status"] == until:
            return task
        assert task["status"] in ("working", "input_required"), task
        await asyncio.sleep(0.02)
