"""Job events through the official MCP Python SDK, with `herald.sdk`, against GiftGenius.

GiftGenius runs as a real process: `serve --stdio` per test, and `serve --port` (in-memory
store) for the module. Each test starts the bulk job on a one-person CSV and checks what the
SDK delivered against the server's own record of the job, `get_job_status`:

* handshake era (`mode="legacy"`): the server sends the session's job events on the session
  (stdio, or the HTTP session's GET stream), and `JobEvents` is all the SDK needs;
* 2026-07-28 (`mode="auto"`, which must land there): no session, so `JobEvents.listen` opens
  `subscriptions/listen` with the `io.herald/jobEvents` filter naming the job started, the
  server sends what it said so far and then the rest, and the acknowledgement says which
  filter the server honoured (never "every job" for a caller nobody authenticated);
* what else reaches the client: its own message handler still gets every message but the
  listen's acknowledgement, and an error raised in a listen block comes out as itself;
* the delivery rules on their own: a real job's events handed to the extension out of
  order, repeated and mixed with a malformed one come out once each, in order;
* the honoured filter on the wire: what the acknowledgement says for malformed filters.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client import IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.types import ProgressNotification, SubscriptionsAcknowledgedNotification, TextResourceContents

from herald.jobs.events import JobEvent
from herald.sdk import JobEvents
from tests.servers import REPO, ServedProcess, giftgenius_http

pytestmark = pytest.mark.slow  # the official SDKs' clients against real server processes

TIMEOUT_SECONDS = 30.0
CSV = "name,department,interests,budget\nAna,Eng,hiking;coffee,40\n"
HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
STDIO = StdioServerParameters(
    command=sys.executable,
    args=["-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"],
    cwd=REPO,
)
JOB_FILTER = "io.herald/jobEvents"


@pytest.fixture(scope="module")
def served() -> Iterator[ServedProcess]:
    with giftgenius_http("memory") as running:
        yield running


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, served: ServedProcess) -> StdioServerParameters | str:
    return STDIO if request.param == "stdio" else served.url


class Heard:
    """What `on_event` was called with, in call order."""

    def __init__(self) -> None:
        self.events: list[JobEvent] = []

    async def __call__(self, event: JobEvent) -> None:
        self.events.append(event)


@asynccontextmanager
async def connect(server: StdioServerParameters | str, mode: str, events: JobEvents) -> AsyncIterator[Client]:
    client = Client(
        server,
        mode=mode,
        extensions=[events],
        message_handler=events.message_handler,
        read_timeout_seconds=TIMEOUT_SECONDS,
        cache=None,
    )
    async with client:
        yield client


async def start_job(client: Client) -> str:
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": CSV})
    assert not started.is_error, started
    assert isinstance(started.structured_content, dict)
    job_id: str = started.structured_content["jobId"]
    return job_id


async def job_status(client: Client, job_id: str) -> dict[str, Any]:
    """The server's own record of the job: its status and every event, from the first."""
    result = await client.call_tool("get_job_status", {"jobId": job_id})
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


async def follow(events: JobEvents, job_id: str, client: Client | None = None) -> list[JobEvent]:
    return [event async for event in events.follow(job_id, client=client)]


async def read_result(client: Client, uri: str) -> dict[str, Any]:
    read = await client.read_resource(uri)
    part = read.contents[0]
    assert isinstance(part, TextResourceContents), part
    assert part.mime_type == "application/json"
    document: dict[str, Any] = json.loads(part.text)
    return document


async def assert_whole_history(client: Client, job_id: str, followed: list[JobEvent]) -> None:
    """`followed` is the job's whole history as the server recorded it, and the job completed."""
    status = await job_status(client, job_id)
    assert status["status"] == "completed", status
    assert [event.to_params() for event in followed] == status["events"]
    assert [event.kind for event in followed][:2] == ["created", "started"]
    assert followed[-1].kind == "completed"
    assert {event.kind for event in followed[2:-1]} == {"progress"}
    document = await read_result(client, followed[-1].payload["resultResourceId"])
    assert [person["name"] for person in document["people"]] == ["Ana"]
    assert document["people"][0]["gifts"]


# -- handshake era: events on the session ---------------------------------------------------------


async def test_handshake_session_brings_the_jobs_events(server: StdioServerParameters | str) -> None:
    heard = Heard()
    events = JobEvents(heard)
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(server, "legacy", events) as client:
        assert client.protocol_version == HANDSHAKE_VERSION
        job_id = await start_job(client)
        # No `client=`: nothing is polled, every event came as a notification.
        followed = await follow(events, job_id)
        await assert_whole_history(client, job_id, followed)
    assert heard.events == followed


# -- 2026-07-28: subscriptions/listen with the job-events filter ----------------------------------


async def test_listen_for_a_started_job_carries_every_event_of_it(
    server: StdioServerParameters | str,
) -> None:
    """The server sends what the named job said before the listen, then the rest: nothing is missed."""
    heard = Heard()
    events = JobEvents(heard)
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(server, "auto", events) as client:
        assert client.protocol_version == MODERN_VERSION
        job_id = await start_job(client)
        async with events.listen(client, job_ids=[job_id]) as subscription:
            assert subscription.honored == {JOB_FILTER: {"jobIds": [job_id]}}
            assert subscription.id is not None
            followed = await follow(events, job_id)
        await assert_whole_history(client, job_id, followed)
    assert heard.events == followed


async def test_listen_for_every_job_is_not_a_firehose(server: StdioServerParameters | str) -> None:
    """Without authentication nobody owns a 2026-07-28 job: "my jobs" selects none, and says so."""
    events = JobEvents()
    async with (
        asyncio.timeout(TIMEOUT_SECONDS),
        connect(server, "auto", events) as client,
        events.listen(client) as subscription,
    ):
        assert JOB_FILTER not in subscription.honored


async def test_listen_for_a_started_job_names_it_and_follow_fills_in_the_rest(served: ServedProcess) -> None:
    events = JobEvents()
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(served.url, "auto", events) as client:
        job_id = await start_job(client)
        async with events.listen(client, job_ids=[job_id]) as subscription:
            assert subscription.honored == {JOB_FILTER: {"jobIds": [job_id]}}
            # The job may have ended before the listen opened: `client=` reads what it missed.
            followed = await follow(events, job_id, client)
        await assert_whole_history(client, job_id, followed)


async def test_listen_is_refused_where_it_cannot_work() -> None:
    events = JobEvents()
    async with asyncio.timeout(TIMEOUT_SECONDS):
        async with connect(STDIO, "legacy", events) as client:
            with pytest.raises(ListenNotSupportedError):
                async with events.listen(client):
                    pass
        # Without `message_handler` the acknowledgement would never reach the extension.
        async with Client(STDIO, mode=MODERN_VERSION, extensions=[events], cache=None) as client:
            with pytest.raises(RuntimeError, match=re.escape("message_handler=events.message_handler")):
                async with events.listen(client):
                    pass
            with pytest.raises(TypeError, match="bare string"):
                async with events.listen(client, job_ids="abc"):
                    pass


async def test_an_error_in_the_listen_block_comes_out_as_itself() -> None:
    events = JobEvents()
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(STDIO, MODERN_VERSION, events) as client:
        # Not wrapped in the ExceptionGroup of the task group that holds the request.
        with pytest.raises(LookupError, match="raised in the block"):
            async with events.listen(client, job_ids=["j1"]):
                raise LookupError("raised in the block")
        # The stream was closed, and the next listen is acknowledged as the first was.
        async with events.listen(client, job_ids=["j1"]) as subscription:
            assert subscription.honored == {JOB_FILTER: {"jobIds": ["j1"]}}


async def test_the_clients_own_handler_gets_every_message_but_the_acknowledgement() -> None:
    seen: list[IncomingMessage] = []
    arrived = asyncio.Condition()

    async def own_handler(message: IncomingMessage) -> None:
        async with arrived:
            seen.append(message)
            arrived.notify_all()

    def mirrored() -> list[float]:
        return sorted(
            message.params.progress for message in seen if isinstance(message, ProgressNotification)
        )

    async def during_the_call(progress: float, total: float | None, message: str | None) -> None:
        return None

    events = JobEvents(message_handler=own_handler)
    async with asyncio.timeout(TIMEOUT_SECONDS):
        async with connect(STDIO, "legacy", events) as client:
            # Started with a progress token, the job mirrors its progress as notifications/progress;
            # they come after the call returned, so the SDK hands them to the message handler.
            started = await client.call_tool(
                "start_bulk_gift_analysis", {"csv": CSV}, progress_callback=during_the_call
            )
            assert isinstance(started.structured_content, dict)
            followed = await follow(events, started.structured_content["jobId"])
            percentages = sorted(
                event.payload["percentage"] for event in followed if event.kind == "progress"
            )
            async with arrived:
                await arrived.wait_for(lambda: len(mirrored()) == len(percentages))
            assert mirrored() == percentages
        async with (
            connect(STDIO, MODERN_VERSION, events) as client,
            events.listen(client, job_ids=["j1"]) as subscription,
        ):
            assert subscription.honored == {JOB_FILTER: {"jobIds": ["j1"]}}
    # The listen's acknowledgement was the extension's to take.
    assert not any(isinstance(message, SubscriptionsAcknowledgedNotification) for message in seen)


# -- the delivery rules ---------------------------------------------------------------------------


async def test_each_event_is_delivered_once_and_in_order_whatever_the_order_it_came_in() -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(STDIO, "legacy", JobEvents()) as client:
        job_id = await start_job(client)
        history: list[dict[str, Any]] = []
        while not history or history[-1]["type"] != "job.completed":
            await asyncio.sleep(0.05)  # polling a condition, under the timeout above
            history = (await job_status(client, job_id))["events"]
    # Six bindings, six SDK queues drained by six tasks at once: a job's events can be handed
    # over in any order, a replayed one again, while the callback is still busy with another.
    # The callback raising once must cost that call only.
    heard: list[JobEvent] = []

    async def on_event(event: JobEvent) -> None:
        await asyncio.sleep(0)  # let the other deliveries in while this call runs
        heard.append(event)
        if event.sequence == 1:
            raise RuntimeError("a callback that fails once")

    events = JobEvents(on_event)
    by_method = {binding.method: binding for binding in events.notifications()}
    shuffled = history + random.Random(7).sample(history, len(history))
    random.Random(11).shuffle(shuffled)
    malformed = {**history[2], "percentage": "half"}

    async def hand_over(params: dict[str, Any]) -> None:
        binding = by_method[f"notifications/job/{params['type'].removeprefix('job.')}"]
        await binding.handler(binding.params_type.model_validate(params))

    await asyncio.gather(*(hand_over(params) for params in [malformed, *shuffled]))
    expected = [JobEvent.from_params(params) for params in history]
    assert heard == expected
    assert await follow(events, job_id) == expected


# -- the honoured filter on the wire --------------------------------------------------------------

WIRE_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN_VERSION,
    "mcp-method": "subscriptions/listen",
}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def acknowledged(url: str, wanted: dict[str, Any]) -> dict[str, Any]:
    """The `notifications` of the acknowledgement a listen with filter `wanted` gets."""
    listen = {
        "jsonrpc": "2.0",
        "id": "wire",
        "method": "subscriptions/listen",
        "params": {"notifications": wanted, "_meta": META},
    }
    async with (
        httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as http,
        http.stream("POST", url, json=listen, headers=WIRE_HEADERS) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:") and line.removeprefix("data:").strip():
                ack = json.loads(line.removeprefix("data:"))
                assert ack["method"] == "notifications/subscriptions/acknowledged", ack
                assert ack["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "wire"}
                honoured: dict[str, Any] = ack["params"]["notifications"]
                return honoured
    raise AssertionError("the stream ended before the acknowledgement")


@pytest.mark.parametrize(
    ("wanted", "honoured"),
    [
        # "Every job of mine", from a caller nobody authenticated, would be everyone's: left out.
        ({JOB_FILTER: True, "toolsListChanged": True}, {"toolsListChanged": True}),
        ({JOB_FILTER: {}}, {}),
        ({JOB_FILTER: {"jobIds": ["a", 1]}}, {JOB_FILTER: {"jobIds": ["a"]}}),
        # Malformed values are left out: a `jobIds` that is not a list is not every job.
        ({JOB_FILTER: {"jobIds": "a"}}, {}),
        ({JOB_FILTER: "yes", "toolsListChanged": "yes", "promptsListChanged": 1}, {}),
    ],
    ids=["every-job-and-tools", "object-without-ids", "some-ids", "ids-not-a-list", "not-booleans"],
)
async def test_acknowledgement_names_only_the_part_of_the_filter_honoured(
    served: ServedProcess, wanted: dict[str, Any], honoured: dict[str, Any]
) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS):
        assert await acknowledged(served.url, wanted) == honoured
