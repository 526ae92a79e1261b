"""The bulk gift analysis as a job: over MCP, from the command line, and cancelled with Ctrl-C."""

from __future__ import annotations

import asyncio
import csv
import io
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from giftgenius.app import build_server
from herald.stores.sqlite import SqliteJobStore
from herald.testing import InMemoryClient, connect
from tests.modern import structured
from tests.servers import giftgenius_http

GOOD = "name,department,interests,budget\nAda,Eng,board games;coffee,60\nBo,,,\nCy,Ops,hiking,40\n"


def employees(rows: int, *, distinct: bool = False) -> str:
    """A CSV of `rows` people; `distinct` gives everyone their own budget, so no work is shared."""
    interests = ["hiking", "coffee", "board games", "reading", "tea", "yoga", "music", "cooking"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["name", "department", "interests", "budget"])
    for n in range(rows):
        writer.writerow(
            [f"Person {n}", f"Dept {n % 7}", f"{interests[n % 8]};{interests[(n * 3) % 8]}", 20 + n % 80]
        )
    return out.getvalue()


@pytest.fixture
async def client() -> AsyncIterator[InMemoryClient]:
    async with connect(build_server()) as connected:
        yield connected


async def follow(client: InMemoryClient, job_id: str) -> dict[str, Any]:
    async with asyncio.timeout(60):
        while True:
            status = (await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"]
            if status["pollAfterMs"] is None:
                return dict(status)
            await asyncio.sleep(status["pollAfterMs"] / 1000)


async def test_bulk_job_over_mcp(client: InMemoryClient) -> None:
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": GOOD, "occasion": "birthday"})
    status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "completed"
    progress = [event for event in status["events"] if event["type"] == "job.progress"]
    stages = list(dict.fromkeys(event["stage"] for event in progress))
    assert stages == ["parse", "extract", "match", "write", "saving the results"]
    assert [event["percentage"] for event in progress] == sorted(event["percentage"] for event in progress)
    result = orjson.loads(
        (await client.request("resources/read", {"uri": status["resultResourceId"]}))["contents"][0]["text"]
    )
    assert [person["name"] for person in result["people"]] == ["Ada", "Cy"]
    assert result["problems"] == [{"row": 3, "reason": result["problems"][0]["reason"]}]
    assert all(gift["price"] <= 60 for gift in result["people"][0]["gifts"])
    exported = await client.request(
        "resources/read", {"uri": status["resultResourceId"].replace(".json", ".csv")}
    )
    assert exported["contents"][0]["mimeType"] == "text/csv"
    assert "Ada" in exported["contents"][0]["text"]


@pytest.mark.parametrize(
    ("text", "code"), [("", "empty_input"), ("name,department\nA,B\n", "missing_columns")]
)
async def test_unusable_input_fails_the_job_with_a_hint(client: InMemoryClient, text: str, code: str) -> None:
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": text})
    status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "failed"
    assert status["error"]["code"] == code
    assert status["error"]["hint"]


async def test_a_semicolon_delimited_csv_is_read(client: InMemoryClient) -> None:
    semicolons = 'name;department;interests;budget\n"Lovelace, Ada";R&D;"board games;coffee";"60,50"\n'
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": semicolons})
    status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "completed", status
    result = orjson.loads(
        (await client.request("resources/read", {"uri": status["resultResourceId"]}))["contents"][0]["text"]
    )
    [person] = result["people"]
    assert (person["name"], person["department"], person["interests"], person["budget"]) == (
        "Lovelace, Ada",
        "R&D",
        ["board games", "coffee"],
        60.5,
    )
    assert person["gifts"]


async def test_text_with_nul_characters_fails_the_job_saying_so(client: InMemoryClient) -> None:
    workbook = "PK\x03\x04\x14\x00\x06\x00name,department,interests\n"
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": workbook})
    status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "failed"
    assert status["error"]["code"] == "not_csv"
    assert "NUL characters" in status["error"]["message"]
    assert "Send the CSV text itself" in status["error"]["hint"]


async def test_progress_tells_every_stage_and_ends_at_a_hundred(client: InMemoryClient) -> None:
    """Reports are spaced in time (`PROGRESS_EVERY_SECONDS`): however fast the job, each
    stage's start is told, percentages rise, the last is saving the result, and the end is 100."""
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": employees(2000)})
    status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "completed"
    progress = [event for event in status["events"] if event["type"] == "job.progress"]
    assert [event["stage"] for event in progress][:1] == ["parse"]
    assert {event["stage"] for event in progress} == {
        "parse",
        "extract",
        "match",
        "write",
        "saving the results",
    }
    percentages = [event["percentage"] for event in progress]
    assert percentages == sorted(set(percentages)), "strictly rising"
    assert progress[-1]["stage"] == "saving the results"
    assert status["percentage"] == 100


@pytest.mark.slow
def test_bulk_command_writes_the_result(tmp_path: Path) -> None:
    source = tmp_path / "team.csv"
    source.write_text(GOOD)
    done = subprocess.run(
        [sys.executable, "-m", "giftgenius", "bulk", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = orjson.loads((tmp_path / "team.gifts.json").read_text())
    assert len(result["people"]) == 2
    assert (tmp_path / "team.gifts.csv").read_text().startswith("name,department")
    assert "1 row had a problem" in done.stderr


@pytest.mark.slow
def test_bulk_command_reports_a_failed_job(tmp_path: Path) -> None:
    source = tmp_path / "bad.csv"
    source.write_text("just some words\n")
    done = subprocess.run(
        [sys.executable, "-m", "giftgenius", "bulk", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "hint:" in done.stderr


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    with giftgenius_http(f"sqlite:///{tmp_path / 's.db'}") as served:
        yield served.url


@pytest.mark.slow
def test_ctrl_c_cancels_the_job(tmp_path: Path, http_server: str) -> None:
    source = tmp_path / "big.csv"
    source.write_text(employees(20_000, distinct=True))  # several seconds of work: time to cancel
    command = subprocess.Popen(
        [sys.executable, "-m", "giftgenius", "bulk", str(source), "--url", http_server],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert command.stderr is not None
    seen = command.stderr.readline()  # "job <id> started": the job runs from here
    assert "started" in seen, seen
    command.send_signal(signal.SIGINT)
    assert command.wait(timeout=60) == 130
    job_id = seen.split("job ", 1)[1].split()[0]
    deadline = time.monotonic() + 20
    while True:
        status = structured(http_server, "get_job_status", {"jobId": job_id})
        if status["pollAfterMs"] is None:
            break
        assert time.monotonic() < deadline, "the job was not cancelled"
        time.sleep(status["pollAfterMs"] / 1000)
    assert status["status"] == "cancelled"


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir())


async def test_a_big_result_is_stored_in_a_fraction_of_its_size(tmp_path: Path) -> None:
    """A gift list per person repeats itself: stored packed, everything the job leaves on
    disk (its arguments, events, checkpoints and both results, with SQLite's WAL) stays
    under ten times the CSV, and the result reads back whole."""
    store = SqliteJobStore(tmp_path / "jobs.db")
    server = build_server()
    server.use_job_store(store)
    text = employees(5_000, distinct=True)
    async with connect(server) as client:
        job_id = (await client.call_tool("start_bulk_gift_analysis", {"csv": text}))["structuredContent"][
            "jobId"
        ]
        await server.jobs.runner.wait_ended(job_id)
        read = await client.request("resources/read", {"uri": f"herald://jobs/{job_id}/result.json"})
        stored = [await store.get_result(job_id, name) for name in ("result.json", "result.csv")]
    document = read["contents"][0]["text"]
    assert len(orjson.loads(document)["people"]) == 5_000, "the result reads back whole"
    assert read["contents"][0]["mimeType"] == "application/json"
    assert len(document) > 5 * len(text), "the result itself is many times the input"
    assert sum(len(body) for _mime, body in filter(None, stored)) < 2 * len(text), "stored packed"
    on_disk = folder_size(tmp_path)
    assert on_disk < 10 * len(text), (on_disk, len(text))
