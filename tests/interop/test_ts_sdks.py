"""The official TypeScript SDKs from npm against GiftGenius, over stdio and HTTP.

The clients live in `tests/interop/ts/` (exact versions in its package-lock.json, installed
by `make unit` with `npm ci`): v1 `@modelcontextprotocol/sdk`, which speaks the handshake
era only, and v2 `@modelcontextprotocol/client`, in both eras. Each run is a small script
(`sdk-v1.mjs`, `sdk-v2.mjs`) that lists tools, calls `suggest_gifts`, reads the catalog,
gets the card prompt, starts the bulk job and follows it by its events (and by polling
`get_job_status`, which must agree), reads the job's result, and closes; v2 also runs the
job as an MCP task (handshake era) or opens `subscriptions/listen` with the job-events
filter (2026-07-28). The script prints one JSON summary; the assertions here compare it
with what the server itself says.

Without Node or the installed packages the tests are skipped (run `make unit`, or `npm ci
--prefix tests/interop/ts`), except under CI=true, where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from giftgenius.catalog import load_catalog
from tests.servers import ServedProcess, giftgenius_http

pytestmark = pytest.mark.slow  # the official SDKs' clients against real server processes

TS_DIR = Path(__file__).with_name("ts")
#: Each script ends itself after 90 s; this bounds a node that would not even start.
RUN_TIMEOUT_SECONDS = 120
STDIO_SERVER = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]
HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
JOB_FILTER = "io.herald/jobEvents"
BUDGET = 40  # what the scripts ask suggest_gifts for
RECIPIENT_NAME = "Marguerite"  # the prompt's recipient_name in the scripts

#: (script, era) for every client; each runs over both transports.
RUNS = [("sdk-v1.mjs", "handshake"), ("sdk-v2.mjs", "handshake"), ("sdk-v2.mjs", "modern")]


def missing_requirements() -> list[str]:
    missing = [] if shutil.which("node") else ["node"]
    if not (TS_DIR / "node_modules" / ".package-lock.json").is_file():
        missing.append("the packages of tests/interop/ts (npm ci --prefix tests/interop/ts)")
    return missing


@pytest.fixture(scope="module")
def node() -> str:
    missing = missing_requirements()
    if missing:
        reason = f"the TypeScript SDK tests need {', '.join(missing)}: run `make unit`"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    found = shutil.which("node")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def served() -> Iterator[ServedProcess]:
    with giftgenius_http("memory") as running:
        yield running


def run(node: str, script: str, era: str, transport: str, served: ServedProcess) -> dict[str, Any]:
    """Run one script to its end; its summary, or a failure with what it printed."""
    where = ["--url", served.url] if transport == "http" else ["--", *STDIO_SERVER]
    command = [node, script, "--transport", transport, "--era", era, *where]
    done = subprocess.run(
        command, cwd=TS_DIR, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS, check=False
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr}\n{done.stdout}"
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def assert_job_followed(job: dict[str, Any]) -> None:
    """The job's events arrived once each, in order, and agree with get_job_status; its result was read."""
    events = job["events"]
    assert [event["eventId"] for event in events] == [
        f"{job['jobId']}:{n}" for n in range(1, len(events) + 1)
    ]
    types = [event["type"] for event in events]
    assert types[:2] == ["job.created", "job.started"]
    assert types[-1] == "job.completed"
    assert set(types[2:-1]) == {"job.progress"}
    assert job["status"]["status"] == "completed"
    assert job["status"]["events"] == len(events), "polling lists exactly the events that were notified"
    result = job["result"]
    assert result["uri"] == job["status"]["resultResourceId"]
    assert result["mimeType"] == "application/json"
    assert [person["name"] for person in result["people"]] == ["Ana"]
    assert result["people"][0]["gifts"] >= 1


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("script", "era"), RUNS, ids=[f"{script[:-4]}-{era}" for script, era in RUNS])
def test_typescript_sdk(node: str, served: ServedProcess, script: str, era: str, transport: str) -> None:
    summary = run(node, script, era, transport, served)

    assert summary["protocolVersion"] == (MODERN_VERSION if era == "modern" else HANDSHAKE_VERSION)
    assert summary["server"]["name"] == "giftgenius"
    assert {"suggest_gifts", "start_bulk_gift_analysis", "get_job_status", "cancel_job"} <= set(
        summary["tools"]
    )
    catalog = load_catalog()  # what the server serves, read here from the same package
    prices = {gift.name: gift.price for gift in catalog.gifts}
    suggest = summary["suggest"]
    assert not suggest["isError"]
    assert 1 <= len(suggest["gifts"]) <= 3
    for gift in suggest["gifts"]:
        assert gift["price"] <= BUDGET, gift
        assert prices[gift["name"]] == gift["price"], gift
    assert summary["catalog"] == {
        "uri": "giftgenius://catalog",
        "mimeType": "application/json",
        "items": len(catalog.gifts),
    }
    assert summary["prompt"]["messages"] >= 1
    assert RECIPIENT_NAME in summary["prompt"]["text"]
    assert_job_followed(summary["job"])
    assert summary["closed"] is True

    if script == "sdk-v2.mjs" and era == "handshake":
        tasks = summary["tasks"]
        assert tasks["created"] == "working"
        structured = tasks["result"]["structured"]
        assert not tasks["result"]["isError"]
        # The task is the job: its id, and the tool's own result once it completed.
        assert structured["jobId"] == tasks["taskId"]
        assert structured["status"] == "completed"
        assert tasks["document"]["uri"] == structured["resultResourceId"]
        assert [person["name"] for person in tasks["document"]["people"]] == ["Ana"]
    if era == "modern":
        listen = summary["listen"]
        # What the server honoured, as it went on the wire: both keys asked for.
        assert listen["acknowledged"] == {"toolsListChanged": True, JOB_FILTER: {"jobIds": [listen["jobId"]]}}
        # What the v2 client's listen() reports: its closed SubscriptionFilter schema keeps
        # the spec's keys only, so the job-events key never shows in `honoredFilter`.
        assert listen["honoredFilter"] == {"toolsListChanged": True}
