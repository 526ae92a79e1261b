"""The `giftgenius` command as a user runs it: a real server process behind `call`."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from giftgenius.cli import parse_arguments
from herald.testing import free_port
from tests.messages import INITIALIZE

pytestmark = pytest.mark.slow  # the command line, in processes of its own

CALL = [sys.executable, "-m", "giftgenius", "call", "suggest_gifts"]
ARGS = [
    "--arg",
    "occasion=birthday",
    "--arg",
    "budget=100",
    "--arg",
    "recipient=friend who loves board games",
]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CALL, *argv], capture_output=True, text=True, timeout=60, check=False)


def test_call_prints_suggestions() -> None:
    done = run(*ARGS)
    assert done.returncode == 0, done.stderr
    assert "1. " in done.stdout
    assert "Board Game" in done.stdout.splitlines()[0]
    assert done.stderr == ""


def test_call_json_output_is_the_result() -> None:
    done = run(*ARGS, "--json")
    result = orjson.loads(done.stdout)
    assert all(gift["price"] <= 100 for gift in result["structuredContent"]["gifts"])


def test_show_wire_prints_each_frame_with_direction() -> None:
    done = run(*ARGS, "--show-wire")
    assert done.returncode == 0
    wire = done.stderr
    assert wire.count("→ client to server") == 4  # initialize, initialized, tools/list, tools/call
    assert wire.count("← server to client") == 3
    assert '"method": "initialize"' in wire
    assert '"method": "notifications/initialized"' in wire
    assert '"jsonrpc": "2.0"' in wire


def test_modern_era_needs_no_handshake() -> None:
    done = run(*ARGS, "--show-wire", "--modern")
    assert done.returncode == 0
    assert '"method": "initialize"' not in done.stderr
    assert '"method": "server/discover"' in done.stderr
    assert '"resultType": "complete"' in done.stderr


def test_business_error_exits_1() -> None:
    done = run("--arg", "occasion=birthday", "--arg", "budget=1", "--arg", "recipient=anyone")
    assert done.returncode == 1
    assert "cheapest option" in done.stdout


def test_unknown_tool_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "giftgenius", "call", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown tool 'nope'" in done.stderr
    assert "suggest_gifts" in done.stderr  # the tools it does offer


def test_arguments_follow_the_schema_types() -> None:
    schema = {
        "properties": {
            "budget": {"type": "number"},
            "recipient": {"type": "string"},
            "n": {"type": "integer"},
        }
    }
    assert parse_arguments(["budget=100", "recipient=42", "n=3"], schema) == {
        "budget": 100,
        "recipient": "42",
        "n": 3,
    }


def test_serve_http_prints_where_and_answers(tmp_path: Path) -> None:
    port = free_port()
    store = tmp_path / "events.db"
    argv = [sys.executable, "-m", "giftgenius", "serve", "--port", str(port), "--store", f"sqlite:///{store}"]
    server = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        assert f"http://127.0.0.1:{port}/mcp" in banner
        assert str(store) in server.stderr.readline()
        body = INITIALIZE
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/mcp",
                    json=body,
                    headers={"accept": "application/json, text/event-stream"},
                    timeout=5,
                )
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        assert response.status_code == 200
        assert response.json()["result"]["serverInfo"]["name"] == "giftgenius"
        assert "mcp-session-id" in response.headers
        assert store.exists()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_cli_states_herald_s_default_lease_grace_and_waiting_bound() -> None:
    from giftgenius import cli
    from giftgenius.cli import serving
    from herald.runtime import membership, runner
    from herald.server import app

    assert cli.DEFAULT_LEASE_SECONDS == membership.DEFAULT_LEASE_SECONDS
    assert serving.DEFAULT_SHUTDOWN_GRACE_SECONDS == runner.DEFAULT_SHUTDOWN_GRACE_SECONDS
    assert serving.DEFAULT_MAX_WAITING_JOBS == app.DEFAULT_MAX_WAITING_JOBS


def test_store_prune_forgets_old_jobs_and_the_server_says_they_expired(tmp_path: Path) -> None:
    import asyncio

    from herald.jobs.events import JobEvent
    from herald.jobs.record import JobRecord
    from herald.stores.sqlite import SqliteJobStore
    from tests.modern import post, structured
    from tests.servers import giftgenius_http

    path = tmp_path / "store.db"

    async def seed() -> None:
        store = SqliteJobStore(path)
        try:
            for job_id, ended in (
                ("old", "2020-01-01T00:00:00.000Z"),
                ("recent", "2099-01-01T00:00:00.000Z"),
            ):
                job = JobRecord(job_id, "start_bulk_gift_analysis", ended, ended, sequence=1)
                await store.create(job, JobEvent(job_id, 1, "created", ended, {"tool": job.tool}))
                job.status, job.sequence = "completed", 2
                await store.record(job, JobEvent(job_id, 2, "completed", ended, {"status": "completed"}))
        finally:
            await store.aclose()

    asyncio.run(seed())
    prune = [sys.executable, "-m", "giftgenius", "store", "prune", "--store", f"sqlite:///{path}"]
    first = subprocess.run(
        [*prune, "--retention", "30d"], capture_output=True, text=True, timeout=60, check=False
    )
    assert first.returncode == 0, first.stderr
    assert "forgot 1 job(s) that ended more than 30d ago" in first.stdout
    again = subprocess.run(prune, capture_output=True, text=True, timeout=60, check=False)
    assert "forgot 0 job(s)" in again.stdout
    typo = subprocess.run(
        [*prune, "--retention", "a week"], capture_output=True, text=True, timeout=60, check=False
    )
    assert typo.returncode == 2
    assert "is not a duration" in typo.stderr
    assert "Traceback" not in typo.stderr
    with giftgenius_http(f"sqlite:///{path}") as served:
        lookup = {"name": "get_job_status", "arguments": {"jobId": "old"}}
        answer = post(served.url, "tools/call", lookup, "get_job_status")
        recent = structured(served.url, "get_job_status", {"jobId": "recent"})
    message = answer["error"]["message"] if "error" in answer else answer["result"]["content"][0]["text"]
    assert "expired" in message, answer
    assert recent["status"] == "completed"


@pytest.mark.parametrize(
    ("store", "said"),
    [
        ("redis:/typo", "unknown store 'redis:/typo'"),
        (
            "postgres://db/gifts",
            "sqlite:////absolute/path.db, a path ending in .db, redis://HOST:PORT/DB or memory",
        ),
        ("redis://127.0.0.1:1/0", "cannot reach Redis at redis://127.0.0.1:1/0"),
    ],
)
def test_a_store_herald_cannot_use_is_said_without_a_traceback(store: str, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--port", "1", "--store", store],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert said in " ".join(done.stderr.replace("│", " ").split()), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["worker", "--store", "memory"],
        ["serve", "--no-worker", "--store", "memory", "--port", "1"],
        ["worker", "--store", "redis:/typo"],
    ],
)
def test_a_worker_or_a_serve_only_replica_without_a_shared_store_is_refused(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "giftgenius", *argv, "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.replace("│", " ").split())
    assert "--store" in said, said
    assert "share" in said or "unknown store" in said, said
    assert "Traceback" not in done.stderr


def test_a_worker_runs_the_jobs_a_serve_only_replica_queues(tmp_path: Path) -> None:
    """On one SQLite file: the replica only queues; the bulk job completes once a worker runs."""
    from tests.modern import structured
    from tests.servers import giftgenius_http

    store = f"sqlite:///{tmp_path / 'store.db'}"
    csv_file = tmp_path / "people.csv"
    csv_file.write_text("name,department,interests,budget\nAda,R&D,coffee;board games,40\n")
    with giftgenius_http(store, "--no-worker") as replica:
        started = structured(replica.url, "start_bulk_gift_analysis", {"csv": csv_file.read_text()})
        assert structured(replica.url, "get_job_status", {"jobId": started["jobId"]})["status"] == "pending"
        worker = subprocess.Popen(
            [sys.executable, "-m", "giftgenius", "worker", "--store", store], stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 60
            while (seen := structured(replica.url, "get_job_status", {"jobId": started["jobId"]}))[
                "status"
            ] != "completed":
                assert seen["status"] in ("pending", "running"), seen
                assert time.monotonic() < deadline, "no worker took the job"
                time.sleep(0.1)
        finally:
            worker.send_signal(signal.SIGINT)
            _, errors = worker.communicate(timeout=30)
        assert worker.returncode == 0, errors.decode()
        assert b"giftgenius worker w-" in errors, errors.decode()
        assert b"Traceback" not in errors


def test_a_worker_answers_probes_and_metrics_and_still_stops_on_its_own_signals(tmp_path: Path) -> None:
    """`--probe-port`: `/healthz`, `/readyz` and `/metrics` beside the jobs; SIGTERM still drains
    the worker (the probe server takes no signal), which exits 0."""
    import httpx

    from herald.testing import free_port
    from herald.testing.ports import wait_until_listening

    port = free_port()
    store = f"sqlite:///{tmp_path / 'store.db'}"
    argv = ["worker", "--store", store, "--probe-port", str(port), "--metrics", "--quiet"]
    worker = subprocess.Popen([sys.executable, "-m", "giftgenius", *argv], stderr=subprocess.PIPE)
    try:
        wait_until_listening(port, worker)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while (ready := httpx.get(f"{base}/readyz")).status_code != 200:
            assert ready.json()["reason"].startswith("starting"), ready.text
            assert time.monotonic() < deadline, ready.text
            time.sleep(0.05)
        assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
        metrics = httpx.get(f"{base}/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        assert "herald_jobs_running" in metrics.text
    finally:
        worker.send_signal(signal.SIGTERM)
        _, errors = worker.communicate(timeout=30)
    assert worker.returncode == 0, errors.decode()
    assert b"Traceback" not in errors


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--metrics"], "--metrics is served on --probe-port"),
        (["--probe-port", "{taken}"], "is in use; pick another with --probe-port"),
    ],
)
def test_worker_probe_mistakes_are_said_in_a_line(argv: list[str], said: str, tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        filled = [part.format(taken=taken.getsockname()[1]) for part in argv]
        store = f"sqlite:///{tmp_path / 'store.db'}"
        done = subprocess.run(
            [sys.executable, "-m", "giftgenius", "worker", "--store", store, "--quiet", *filled],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert said in " ".join(done.stderr.replace("│", " ").split()), done.stderr
    assert "Traceback" not in done.stderr
