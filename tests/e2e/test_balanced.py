"""Replicas and workers behind a real load balancer (haproxy), with kill -9 mid-job.

On Redis: two `giftgenius serve --no-worker` replicas behind haproxy, which sends each
POST to the next replica in turn (and the GET stream to the first while it is up, so the
test knows which replica holds it), plus two `giftgenius worker` processes. Four bulk
analyses start through the balancer: `herald.client` in the handshake era and in
2026-07-28, the official Python SDK, and `giftgenius bulk --url`. While they run, the
replica holding the streams and the worker running the first job are killed with
SIGKILL. The jobs resume on the surviving worker from their checkpoints, every client
sees every event of its job exactly once after de-duplication with progress that never
goes back, and `giftgenius bulk` writes its result files.

On SQLite: the same clients and kills with two `giftgenius serve` processes on one file,
each serving and running jobs; haproxy sends everything to the first until it dies, then
to the second, which resumes the first one's jobs and serves its sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
import pytest
from mcp.shared.exceptions import MCPError

from herald.client import connect_http
from herald.jobs.service import RESUMED
from herald.testing import free_port
from tests.giftgenius.test_bulk_job import employees
from tests.interop.test_sdk_http import connect as sdk_connect
from tests.redis_server import redis_server
from tests.servers import GIFTGENIUS, REPO, Started, job_store, running_past, started

pytestmark = pytest.mark.slow  # replicas behind haproxy, in real processes

PEOPLE = 30_000
#: The workers' lease: short, so takeover comes soon after the kill, yet longer than a busy
#: worker's loop is held up by four analyses at once (a shorter one lapses under load, and
#: a live worker's job is taken over before the kill).
LEASE_SECONDS = 3
#: Long enough for four bulk analyses on two cores, with a takeover in the middle.
DEADLINE_SECONDS = 300.0
#: How many times the SDK client connects again after a request was lost with a replica.
SDK_RECONNECTS = 5


def haproxy_config(port: int, backends: list[int], balance: str) -> str:
    servers = "\n".join(
        f"    server r{n} 127.0.0.1:{backend} check inter 200ms fall 1 rise 2"
        for n, backend in enumerate(backends, 1)
    )
    return f"""
defaults
    mode http
    timeout connect 1s
    timeout client 120s
    timeout server 120s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance {balance}
    # The GET stream goes to r1 while it is up, so the test knows which replica to kill.
    use-server r1 if METH_GET
{servers}
"""


@contextlib.contextmanager
def balancer(tmp_path: Path, backends: list[int], balance: str) -> Iterator[str]:
    if shutil.which("haproxy") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("haproxy is not installed (make test installs it: make service-deps)")
        pytest.skip("haproxy is not installed; run make service-deps")
    port = free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(port, backends, balance))
    with started(["haproxy", "-f", str(config), "-db"], tmp_path / "haproxy.log", port):
        yield f"http://127.0.0.1:{port}/mcp"


@dataclass
class Followed:
    """What one client saw of its job: events by id, in the order first seen."""

    job_id: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0
    following: asyncio.Event = field(default_factory=asyncio.Event)
    #: How often the client had to connect again (a request lost with a killed replica).
    reconnects: int = 0
    #: Where a polling client goes on from.
    cursor: str | None = None

    def take(self, event: dict[str, Any]) -> None:
        if any(seen["eventId"] == event["eventId"] for seen in self.events):
            self.duplicates += 1
            return
        self.events.append(event)
        if event["type"] == "job.started":
            self.following.set()

    def check(self) -> None:
        """Every event once, in sequence order, with no gap, progress rising, ending completed."""
        sequences = [int(event["eventId"].rsplit(":", 1)[1]) for event in self.events]
        assert sequences == list(range(1, len(sequences) + 1)), sequences
        kinds = [event["type"] for event in self.events]
        assert kinds[0] == "job.created", kinds
        assert kinds[-1] == "job.completed", kinds
        progress = [event["percentage"] for event in self.events if event["type"] == "job.progress"]
        assert progress == sorted(progress), "progress never goes back"


async def follow_with_herald(url: str, csv_text: str, modern: bool, seen: Followed) -> None:
    async with connect_http(url, modern=modern, reconnect_timeout=60) as client:
        started_job = await client.call_tool("start_bulk_gift_analysis", {"csv": csv_text})
        seen.job_id = started_job["structuredContent"]["jobId"]
        async for event in client.job_events(seen.job_id):
            seen.take(event.to_params())


async def follow_with_sdk(url: str, csv_text: str, seen: Followed) -> None:
    """Start a job with the official SDK, then poll it; a poll lost with a killed replica is
    polled again on a new connection (the SDK does not retry: its user does)."""
    async with sdk_connect(url, "handshake") as client:
        result = await client.call_tool("start_bulk_gift_analysis", {"csv": csv_text})
        assert result.structured_content is not None
        seen.job_id = result.structured_content["jobId"]
    for _ in range(SDK_RECONNECTS):
        if await poll_with_sdk(url, seen):
            return
        seen.reconnects += 1
    raise AssertionError(f"the SDK client lost its connection {SDK_RECONNECTS} times")


async def poll_with_sdk(url: str, seen: Followed) -> bool:
    """Poll the job on one connection until it ends (True); `seen` keeps the cursor."""
    try:
        async with sdk_connect(url, "handshake") as client:
            while True:
                arguments: dict[str, Any] = {"jobId": seen.job_id}
                if seen.cursor is not None:
                    arguments["cursor"] = seen.cursor
                status = (await client.call_tool("get_job_status", arguments)).structured_content
                assert status is not None
                for event in status["events"]:
                    seen.take(event)
                seen.cursor = status["nextCursor"]
                if status["pollAfterMs"] is None:
                    return True
                await asyncio.sleep(status["pollAfterMs"] / 1000)
    except ExceptionGroup as failed:
        if failed.split(_lost_with_the_replica)[1] is not None:
            raise  # anything else fails the test
        return False  # the replica went away mid-request


#: What the SDK makes of a non-JSON error status (the balancer's 502 for a dead backend, or
#: its 503 while no backend passes its health check), and of a request whose connection
#: closed under it.
LOST_REQUEST_ERRORS = {"Server returned an error response", "Connection closed"}


def _lost_with_the_replica(error: BaseException) -> bool:
    """A request the killed replica took with it: the connection dropped, or the balancer said so.

    `anyio.ClosedResourceError` is the SDK's own request task delivering such an error after
    the failed request already closed the client's streams (seen with a 503 to `initialize`).
    """
    if isinstance(error, BaseExceptionGroup):
        return False  # look inside
    return isinstance(error, httpx2.TransportError | anyio.ClosedResourceError) or (
        isinstance(error, MCPError) and error.message in LOST_REQUEST_ERRORS
    )


async def jobs_created(store: str, count: int) -> None:
    """Until the store holds `count` jobs (other processes create them)."""
    async with job_store(store) as jobs:
        while len(await jobs.job_ids()) < count:  # noqa: ASYNC110  # another process writes them
            await asyncio.sleep(0.01)


async def scenario(
    url: str, store: str, csv_text: str, doomed_replica: Started, workers: dict[str, Started]
) -> tuple[list[Followed], set[str]]:
    """Start three jobs, kill -9 the stream's replica and the first job's worker, follow to the end."""
    herald_handshake, herald_modern, sdk = Followed(), Followed(), Followed()
    killed: set[str] = set()
    async with asyncio.timeout(DEADLINE_SECONDS):
        await jobs_created(store, 1)  # `bulk`'s: its start is not caught in the kill
    async with asyncio.timeout(DEADLINE_SECONDS), asyncio.TaskGroup() as clients:
        clients.create_task(follow_with_herald(url, csv_text, False, herald_handshake))
        clients.create_task(follow_with_herald(url, csv_text, True, herald_modern))
        clients.create_task(follow_with_sdk(url, csv_text, sdk))
        await herald_handshake.following.wait()  # the client follows a running job
        running = await running_past(store, herald_handshake.job_id, 42.5)  # past a checkpoint
        assert running is not None, "the job ended before the kill"
        worker_id = running.worker
        assert worker_id in workers, (worker_id, list(workers))
        workers[worker_id].kill()
        killed.add(worker_id)
        if doomed_replica is not workers[worker_id]:
            doomed_replica.kill()
    return [herald_handshake, herald_modern, sdk], killed


@pytest.fixture(params=["redis", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_jobs_survive_kill_9_of_a_replica_and_a_worker_behind_a_balancer(
    store_kind: str, tmp_path: Path
) -> None:
    csv_file = tmp_path / "people.csv"
    csv_file.write_text(employees(PEOPLE))
    out = tmp_path / "gifts.json"
    with contextlib.ExitStack() as stack:
        if store_kind == "redis":
            store = stack.enter_context(redis_server())
            serve_options = ["--no-worker"]
        else:
            store = f"sqlite:///{tmp_path / 'store.db'}"
            serve_options = []
        replicas = []
        for n in range(2):
            port = free_port()
            argv = [
                *GIFTGENIUS,
                "serve",
                "--port",
                str(port),
                "--store",
                store,
                "--job-lease",
                str(LEASE_SECONDS),
            ]
            replicas.append(
                stack.enter_context(started([*argv, *serve_options], tmp_path / f"r{n}.log", port))
            )
        workers: dict[str, Started] = {}
        if store_kind == "redis":
            for n in range(2):
                argv = [*GIFTGENIUS, "worker", "--store", store, "--job-lease", str(LEASE_SECONDS)]
                worker = stack.enter_context(started(argv, tmp_path / f"w{n}.log", measured=False))
                workers[worker.worker_id()] = worker
        else:  # each replica is its own worker
            workers = {replica.worker_id(): replica for replica in replicas}
        balance = "roundrobin" if store_kind == "redis" else "first"
        url = stack.enter_context(balancer(tmp_path, [replica.port or 0 for replica in replicas], balance))
        bulk = subprocess.Popen(
            [*GIFTGENIUS, "bulk", str(csv_file), "--url", url, "--out", str(out)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        followed, killed = asyncio.run(scenario(url, store, csv_file.read_text(), replicas[0], workers))
        _, bulk_errors = bulk.communicate(timeout=DEADLINE_SECONDS)
        assert replicas[0].process.poll() is not None, "the replica holding the streams was killed"
    for seen in followed:
        seen.check()
    resumed = [seen for seen in followed if any(event.get("stage") == RESUMED for event in seen.events)]
    assert followed[0] in resumed, "the first job was taken over by the surviving worker"
    assert bulk.returncode == 0, bulk_errors.decode()
    result = orjson.loads(out.read_text())
    assert result["summary"]["people"] == PEOPLE, result["summary"]
    assert out.with_suffix(".csv").read_text().count("\n") == PEOPLE + 1, "a header and a row per person"
    assert killed, "a worker was killed"
