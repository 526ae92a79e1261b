"""A job event is stored once: the HTTP event log holds only its place, and ids are the event's.

A five-step job runs over a handshake-era session with a listening GET stream, with a
`tools/list_changed` between two of its events, against both event-log backends (the
SQLite one sharing its file with a SQLite job store, as `giftgenius serve` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from herald import Server
from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.protocol.sse import SSEDecoder, SSEEvent, encode_event
from herald.runtime import JobContext
from herald.stores.eventlog import EventLog, JobEventReference, StoredEvent
from herald.stores.memory import MemoryEventLog, MemoryJobStore
from herald.stores.sqlite import SqliteEventLog, SqliteJobStore
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from herald.transports.http.streams import StandaloneStream, resume_point, stored_frames
from tests.transports.http.conftest import HEADERS, INIT_PARAMS, EventReader

TOKEN = "five-steps"


@dataclass
class Served:
    server: Server
    log: EventLog
    url: str
    client: httpx.AsyncClient
    database: Path | None
    #: Opened by the test: the job waits here after its second step.
    go_on: asyncio.Event

    async def post(self, body: Any, session_id: str) -> httpx.Response:
        return await self.client.post(self.url, json=body, headers={**HEADERS, "mcp-session-id": session_id})

    async def initialize(self) -> str:
        answer = await self.client.post(
            self.url,
            json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS},
            headers=HEADERS,
        )
        session_id = answer.headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
        return session_id

    async def start_job(self, session_id: str) -> str:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "five_steps", "arguments": {}, "_meta": {"progressToken": TOKEN}},
        }
        answer = await self.post(call, session_id)
        job_id: str = answer.json()["result"]["structuredContent"]["jobId"]
        return job_id

    @contextlib.asynccontextmanager
    async def get_stream(
        self, session_id: str, last_event_id: str | None = None
    ) -> AsyncIterator[EventReader]:
        headers = {"accept": "text/event-stream", "mcp-session-id": session_id}
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        async with self.client.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200
            yield EventReader(response)


def build_server(go_on: asyncio.Event) -> Server:
    server = Server("job-event-log")

    @server.job()
    async def five_steps(ctx: JobContext) -> dict[str, int]:
        """Five progress steps, with a list change on the session's stream after the second."""
        for step in range(1, 6):
            await ctx.report_progress(20 * step, f"step {step}")
            if step == 2:
                await ctx.saved()  # progress is written behind: stored (and told) before what follows
                server.remove_tool("spare")  # a message that is no job event, between two that are
                await go_on.wait()
        return {"steps": 5}

    @server.tool
    async def spare() -> str:
        """Removed while the job runs."""
        return "spare"

    return server


@pytest.fixture(params=["memory", "sqlite"])
async def served(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Served]:
    go_on = asyncio.Event()
    server = build_server(go_on)
    database: Path | None = None
    log: EventLog
    if request.param == "sqlite":
        database = tmp_path / "herald.db"
        log = SqliteEventLog(database)
        server.use_job_store(SqliteJobStore(database))
    else:
        log = MemoryEventLog()
    config = HttpConfig(session_ttl=60, keepalive_interval=0.2)
    async with serve_http(server, config, log) as (url, _), httpx.AsyncClient(timeout=10) as client:
        yield Served(server, log, url, client, database, go_on)


def wire(events: list[SSEEvent]) -> list[tuple[str | None, dict[str, Any]]]:
    """(SSE id, message) of each event."""
    return [(event.id, orjson.loads(event.data)) for event in events if event.data]


async def read_until_completed(reader: EventReader) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    while not events or orjson.loads(events[-1].data).get("method") != "notifications/job/completed":
        found = await reader.next()
        assert found is not None, "the stream ended before the job did"
        events.append(found)
    return events


async def read_until_id(reader: EventReader, event_id: str) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    while not events or events[-1].id != event_id:
        found = await reader.next()
        assert found is not None
        events.append(found)
    return events


def expected_stream(job_id: str) -> list[tuple[str | None, str]]:
    """(SSE id, method) of everything the session's stream carries for the job, in order."""
    expected: list[tuple[str | None, str]] = [
        (f"{job_id}:1", "notifications/job/created"),
        (f"{job_id}:2", "notifications/job/started"),
    ]
    for step in range(1, 6):
        expected += [(f"{job_id}:{step + 2}", "notifications/job/progress"), (None, "notifications/progress")]
        if step == 2:
            expected.append(("g.5", "notifications/tools/list_changed"))
    return [*expected, (f"{job_id}:8", "notifications/job/completed")]


def after(
    live: list[tuple[str | None, dict[str, Any]]], event_id: str
) -> list[tuple[str | None, dict[str, Any]]]:
    """What a client that last saw `event_id` has not seen: the events after it and its mirrors."""
    index = next(index for index, (found, _) in enumerate(live) if found == event_id) + 1
    while index < len(live) and live[index][0] is None:
        index += 1
    return live[index:]


async def run_job(served: Served) -> tuple[str, str, list[tuple[str | None, dict[str, Any]]]]:
    """A session that listens on its GET stream while a five-step job runs to its end."""
    session_id = await served.initialize()
    async with asyncio.timeout(10), served.get_stream(session_id) as reader:
        job_id = await served.start_job(session_id)
        first = await read_until_id(reader, "g.5")
        served.go_on.set()
        rest = await read_until_completed(reader)
    return session_id, job_id, wire(first + rest)


async def test_a_job_event_is_stored_once_and_its_id_is_the_events_own(served: Served) -> None:
    session_id, job_id, live = await run_job(served)
    assert [(found, message["method"]) for found, message in live] == expected_stream(job_id)
    for found, message in live:
        if message["method"].startswith("notifications/job/"):
            assert found == message["params"]["eventId"], "one id per job event: its own"
    mirrors = [message["params"] for _, message in live if message["method"] == "notifications/progress"]
    assert mirrors == [
        {"progressToken": TOKEN, "progress": 20 * step, "total": 100, "message": f"step {step}"}
        for step in range(1, 6)
    ]

    store = served.server.jobs.reader
    stored_events = [event.to_params() for event in await store.events_after(job_id)]
    assert stored_events == [
        message["params"] for _, message in live if "eventId" in message.get("params", {})
    ]

    rows = await served.log.read_after(session_id, "g", 0)
    assert [row.position for row in rows] == list(range(1, 10))
    references = [row.job_event for row in rows if row.job_event is not None]
    assert references == [JobEventReference(job_id, sequence) for sequence in range(1, 9)]
    assert all(row.data == b"" for row in rows if row.job_event is not None), "a job event's row has no bytes"
    (list_changed,) = [row for row in rows if row.job_event is None]
    assert list_changed.position == 5
    assert orjson.loads(list_changed.data)["method"] == "notifications/tools/list_changed"

    status = await served.post(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_job_status", "arguments": {"jobId": job_id}},
        },
        session_id,
    )
    polled = status.json()["result"]["structuredContent"]["events"]
    assert [event["eventId"] for event in polled] == [f"{job_id}:{n}" for n in range(1, 9)], (
        "the cursor pages the same events, under the same ids"
    )


async def test_no_job_payload_is_stored_in_the_stream_log_file(served: Served) -> None:
    session_id, job_id, _ = await run_job(served)
    payload = b"".join(row.data for row in await served.log.read_after(session_id, "g", 0))
    assert job_id.encode() not in payload, "no job event, nor its id, is in the stream log's bytes"
    assert b"notifications/progress" not in payload, "the progress mirror is never stored"
    if served.database is None:
        return
    with contextlib.closing(sqlite3.connect(served.database)) as db:  # what the file itself holds
        raw = db.execute("SELECT data, job_id, job_sequence FROM stream_events ORDER BY position").fetchall()
        job_rows = db.execute("SELECT COUNT(*) FROM job_events WHERE job_id = ?", (job_id,)).fetchone()[0]
    assert [(job, sequence) for _, job, sequence in raw if job is not None] == [
        (job_id, sequence) for sequence in range(1, 9)
    ]
    assert all(bytes(data) == b"" for data, job, _ in raw if job is not None), "references only"
    assert job_id.encode() not in b"".join(bytes(data) for data, _, _ in raw)
    assert job_rows == 8, "the job store holds each event once"


@pytest.mark.parametrize("resume_after", ["job event", "list change"])
async def test_resuming_during_a_job(served: Served, resume_after: str) -> None:
    """A client leaves mid-job and comes back with the last id it saw; it misses nothing."""
    session_id = await served.initialize()
    async with asyncio.timeout(10):
        async with served.get_stream(session_id) as reader:
            job_id = await served.start_job(session_id)
            seen = wire(await read_until_id(reader, "g.5"))
        if resume_after == "job event":  # the list change was lost: the last id seen is job event 4's
            seen, last_id = seen[:-1], f"{job_id}:4"
        else:
            last_id = "g.5"
        async with served.get_stream(session_id, last_id) as reader:
            served.go_on.set()
            resumed = wire(await read_until_completed(reader))
    everything = seen + resumed
    assert [(found, message["method"]) for found, message in everything] == expected_stream(job_id)
    if resume_after == "job event":
        assert resumed[0] == ("g.5", {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


@pytest.mark.parametrize(
    ("last_seen", "same_as"),
    [
        ("{job}:1", "{job}:1"),
        ("{job}:4", "{job}:4"),
        ("g.5", "g.5"),
        ("{job}:7", "{job}:7"),
        ("g.2", "{job}:2"),  # a job event's position as a stream id (no client is sent one) works too
    ],
)
async def test_resuming_after_a_job_replays_it_from_the_job_store(
    served: Served, last_seen: str, same_as: str
) -> None:
    session_id, job_id, live = await run_job(served)
    async with asyncio.timeout(10), served.get_stream(session_id, last_seen.format(job=job_id)) as reader:
        replayed = wire(await read_until_completed(reader))
    expected = after(live, same_as.format(job=job_id))
    assert replayed == expected, "the replay is what was sent live: events, ids and derived mirrors"


async def test_a_job_event_id_this_session_never_carried_is_refused(served: Served) -> None:
    session_id, job_id, _ = await run_job(served)
    other = await served.initialize()
    headers = {"accept": "text/event-stream", "mcp-session-id": other}
    for refused in (f"{job_id}:3", f"{job_id}:99", "job:x"):
        answer = await served.client.get(served.url, headers={**headers, "last-event-id": refused})
        assert answer.status_code == 400, refused
    assert session_id != other


async def test_a_replay_skips_the_job_frames_queued_while_it_read_the_log() -> None:
    """A listener attached before the log is read gets each job event once: stored or queued."""
    jobs = MemoryJobStore()
    job = JobRecord(
        "j", "tool", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", progress_token=7, sequence=1
    )
    events = [
        JobEvent("j", 1, "created", job.created_at, {"tool": "tool", "status": "pending"}),
        JobEvent("j", 2, "started", job.created_at, {"status": "running"}),
        JobEvent("j", 3, "progress", job.created_at, {"percentage": 50, "stage": "half"}),
        JobEvent("j", 4, "progress", job.created_at, {"percentage": 75, "stage": "most"}),
    ]
    await jobs.create(job, events[0])
    for event in events[1:]:
        job.sequence = event.sequence
        await jobs.record(job, event)
    log = MemoryEventLog()
    stream = StandaloneStream(log, "s", spawn=asyncio.get_running_loop().create_task, jobs=lambda: jobs)
    try:
        async with asyncio.timeout(5):
            for event in events[:2]:
                stream.send_job_event(event, job.progress_token)
            while stream.position < 2:  # noqa: ASYNC110  # the pump tells nobody it stored an event
                await asyncio.sleep(0)
            live = stream.listen()
            stream.send_job_event(events[2], job.progress_token)
            while not live:  # noqa: ASYNC110  # nor that it queued a frame
                await asyncio.sleep(0)
            decoder = SSEDecoder()
            replay = stream.frames(live, 0, keepalive=5)
            chunk = await anext(replay)  # events 1 to 3 from the log; 3 is queued in `live` too
            stream.send_job_event(events[3], job.progress_token)  # stored and queued meanwhile
            while stream.position < 4:  # noqa: ASYNC110  # as above
                await asyncio.sleep(0)
            stream.detach(live)  # the response ends after what is queued
            received = decoder.feed(chunk or b"")
            async for chunk in replay:
                received += decoder.feed(chunk or b"")
    finally:
        await stream.aclose()
    assert [(item.id, orjson.loads(item.data)["method"]) for item in received] == [
        ("j:1", "notifications/job/created"),
        ("j:2", "notifications/job/started"),
        ("j:3", "notifications/job/progress"),
        (None, "notifications/progress"),
        ("j:4", "notifications/job/progress"),
        (None, "notifications/progress"),
    ], "event 3 was both stored and queued: it goes out once; event 4, queued later, goes out too"


async def test_a_job_event_the_job_store_lacks_is_not_replayed() -> None:
    stored = [StoredEvent(1, b'{"n":1}'), StoredEvent(2, job_event=JobEventReference("gone", 1))]
    assert await stored_frames(stored, "g", MemoryJobStore) == encode_event(b'{"n":1}', event_id="g.1")
    assert await stored_frames(stored, "g", None) == encode_event(b'{"n":1}', event_id="g.1")


async def test_a_last_event_id_names_a_stream_position_or_a_job_event_of_the_session() -> None:
    log = MemoryEventLog()
    await log.append("s", "g", b"{}")
    await log.append_job_event("s", "g", "job.1", 3)
    assert await resume_point(log, "s", "g.1") == ("g", 1)
    assert await resume_point(log, "s", "a1b2.7") == ("a1b2", 7), "a POST stream's id"
    assert await resume_point(log, "s", "job.1:3") == ("g", 2), "a job event id: its place on stream g"
    for nothing in ("job.1:4", "job.1:x", ":3", "g.", "g.x", "no id", "a:b.3"):
        assert await resume_point(log, "s", nothing) is None, nothing
    assert await resume_point(log, "other session", "job.1:3") is None
