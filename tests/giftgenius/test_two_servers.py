"""Two `giftgenius serve` processes on one store (a SQLite file, or a private Redis): one killed mid-job.

Each is a worker with a one-second lease. The bulk analysis is resumable: the server still
running takes over the killed one's job and finishes it from its last checkpoint, with one
sequence of events and the result an uninterrupted run has.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from giftgenius.bulk import analyze
from giftgenius.catalog import load_catalog
from tests.giftgenius.test_bulk_job import employees
from tests.modern import META, call_tool, headers_for, result, structured
from tests.redis_server import redis_server
from tests.servers import giftgenius_http, running_past

pytestmark = pytest.mark.slow  # two server processes on one store

PEOPLE = 40_000  # long enough that the kill lands mid-job


def status(url: str, job_id: str) -> dict[str, Any]:
    return structured(url, "get_job_status", {"jobId": job_id})


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.db'}"
        return
    with redis_server() as url:
        yield url


def test_the_survivor_finishes_the_killed_servers_bulk_job(store: str) -> None:
    text = employees(PEOPLE)
    with giftgenius_http(store, "--job-lease", "1", measured=False) as survivor:
        with giftgenius_http(store, "--job-lease", "1", kill=True, measured=False) as doomed:
            job_id = structured(doomed.url, "start_bulk_gift_analysis", {"csv": text})["jobId"]
            # Into the matching stage, past a saved checkpoint (every 2,000 people).
            running = asyncio.run(asyncio.wait_for(running_past(store, job_id, 42.5), 120))
            assert running is not None, "the job ended before the kill"
            before = running.events
        # Killed (SIGKILL, on leaving the block): its lease lapses and the survivor claims the job.
        deadline = time.monotonic() + 180
        while (after := status(survivor.url, job_id))["status"] in ("pending", "running"):
            assert time.monotonic() < deadline, "the job was not finished by the survivor"
            time.sleep(0.2)
        events = call_tool(survivor.url, "get_job_status", {"jobId": job_id})
        read = result(
            survivor.url, "resources/read", {"uri": after["resultResourceId"]}, after["resultResourceId"]
        )
    assert after["status"] == "completed", after.get("error")
    everything = after["events"]
    assert everything[: len(before)] == before, "what was seen before the kill stays as it was"
    kinds = [event["type"] for event in everything]
    assert kinds.count("job.started") == 1
    assert kinds.count("job.completed") == 1
    assert "job.failed" not in kinds
    sequences = [int(event["eventId"].rpartition(":")[2]) for event in everything]
    assert sequences == list(range(1, len(everything) + 1)), "one sequence, no gaps, no repeats"
    percentages = [event["percentage"] for event in everything if event["type"] == "job.progress"]
    assert percentages == sorted(percentages), "progress never goes back"
    assert "resumed after its worker stopped" in [event.get("stage") for event in everything]
    assert events["structuredContent"]["status"] == "completed"
    document = orjson.loads(read["contents"][0]["text"])
    expected = asyncio.run(_uninterrupted(text))
    # Said by its first difference: pytest's diff of two 40,000-person documents takes minutes.
    differs = [key for key in expected if document.get(key) != expected[key]]
    people = [
        (at, got, want)
        for at, (got, want) in enumerate(zip(document["people"], expected["people"], strict=False))
        if got != want
    ]
    assert not differs, f"the result differs from an uninterrupted run's in {differs}; people: {people[:2]}"


async def _uninterrupted(text: str) -> Any:
    async def ignore(percentage: float, stage: str) -> None:
        return None

    result = await analyze(text, progress=ignore, catalog=load_catalog())
    return orjson.loads(orjson.dumps(result.to_json()))


def test_a_listener_on_one_replica_hears_a_job_run_by_the_other() -> None:
    """On Redis, job events reach `subscriptions/listen` whatever replica runs the job."""
    with (
        redis_server() as store,
        giftgenius_http(store) as runner,
        giftgenius_http(store) as other,
        httpx.Client(timeout=60) as client,
    ):
        job_id = structured(runner.url, "start_bulk_gift_analysis", {"csv": employees(3_000)})["jobId"]
        listen = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "subscriptions/listen",
            "params": {"notifications": {"io.herald/jobEvents": {"jobIds": [job_id]}}, "_meta": META},
        }
        headers = headers_for("subscriptions/listen")
        heard: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        with client.stream("POST", other.url, json=listen, headers=headers) as response:
            for line in response.iter_lines():
                assert time.monotonic() < deadline, "the other replica told nothing more"
                if not line.startswith("data: "):
                    continue
                message = orjson.loads(line.removeprefix("data: "))
                if message.get("method", "").startswith("notifications/job/"):
                    heard.append(message["params"])
                    if message["method"] == "notifications/job/completed":
                        break
        stored = status(runner.url, job_id)["events"]
    assert heard, "no event reached the other replica"
    assert heard[-1]["type"] == "job.completed"
    ids = [event["eventId"] for event in heard]
    assert len(ids) == len(set(ids)), "each event once"
    sequences = [int(event_id.rpartition(":")[2]) for event_id in ids]
    assert sequences == sorted(sequences), "in order"
    by_id = {event["eventId"]: event for event in stored}
    assert all(
        {key: by_id[event["eventId"]][key] for key in event if key != "_meta"}
        == {key: value for key, value in event.items() if key != "_meta"}
        for event in heard
    ), "what the other replica told is what the store holds"
    assert sum(event["type"] == "job.progress" for event in heard) >= 3
