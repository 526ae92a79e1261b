"""A rolling deploy costs no running work: real processes stopped as operators and hosts stop them.

On Redis, a replica queues and two `giftgenius worker` processes run: SIGTERM to the worker
running a bulk analysis hands the job back to the queue, the other worker goes on from its
checkpoint, and the result is byte for byte the one a run never stopped gives. On SQLite,
a desktop host's short `giftgenius serve --stdio` conversation that took over a crashed
server's job hands it back when the conversation closes, instead of failing it.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from herald.jobs.events import TERMINAL_KINDS
from herald.jobs.record import JobRecord
from herald.jobs.service import HANDED_BACK, RESUMED
from herald.testing import free_port
from tests.giftgenius.test_bulk_job import employees
from tests.jobs.test_shutdown import result_documents, uninterrupted_result, until_ended
from tests.modern import structured
from tests.redis_server import redis_server
from tests.servers import GIFTGENIUS, REPO, giftgenius_http, job_store, running_past, started

pytestmark = pytest.mark.slow

#: Short, so a killed server's job is an orphan soon; long enough for a busy loop to renew it.
LEASE = "2"


def assert_one_gapless_history(events: list[dict[str, object]]) -> None:
    """Sequences 1..n with no gap, progress never going back, and exactly one ending."""
    sequences = [int(str(event["eventId"]).rpartition(":")[2]) for event in events]
    assert sequences == list(range(1, len(events) + 1)), sequences
    percentages = [float(str(event["percentage"])) for event in events if event["type"] == "job.progress"]
    assert percentages == sorted(percentages), "progress never goes back"
    kinds = [str(event["type"]).removeprefix("job.") for event in events]
    assert [kind for kind in kinds if kind in TERMINAL_KINDS] == ["completed"], kinds


async def held_by_another(store: str, job_id: str, worker: str | None) -> JobRecord:
    """The job once a worker other than `worker` holds it (bounded)."""
    async with job_store(store) as jobs, asyncio.timeout(30):
        while True:
            job = await jobs.get(job_id)
            if job is not None and job.worker not in (worker, None):
                return job
            await asyncio.sleep(0.05)


async def test_sigterm_of_a_worker_hands_its_job_to_another_worker(tmp_path: Path) -> None:
    csv = employees(20_000, distinct=True)
    expected = await uninterrupted_result(csv)
    with redis_server() as store, ExitStack() as stack:
        port = free_port()
        replica = [*GIFTGENIUS, "serve", "--quiet", "--no-worker", "--port", str(port), "--store", store]
        stack.enter_context(started(replica, tmp_path / "replica.log", port))
        workers = {}
        for n in (1, 2):
            argv = [*GIFTGENIUS, "worker", "--store", store, "--job-lease", LEASE]
            worker = stack.enter_context(started(argv, tmp_path / f"w{n}.log", measured=False))
            workers[worker.worker_id()] = worker
        url = f"http://127.0.0.1:{port}/mcp"
        job_id = structured(url, "start_bulk_gift_analysis", {"csv": csv})["jobId"]
        running = await running_past(store, job_id, 20)
        assert running is not None, "the job ended before SIGTERM"
        assert running.worker in workers, running
        assert workers[running.worker].terminate() == 0, "the worker stopped cleanly"
        ended = until_ended(url, job_id)
        assert ended["status"] == "completed", ended.get("error")
        assert result_documents(url, job_id) == expected, "the same result as a run never stopped"
    assert_one_gapless_history(ended["events"])
    stages = [event.get("stage") for event in ended["events"] if event["type"] == "job.progress"]
    assert stages.index(HANDED_BACK) < stages.index(RESUMED), stages


async def test_a_stdio_conversation_that_took_over_a_job_hands_it_back_when_it_closes(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    csv = employees(20_000, distinct=True)
    expected = await uninterrupted_result(csv)
    with giftgenius_http(store, "--job-lease", LEASE, kill=True, measured=False) as crashed:
        job_id = structured(crashed.url, "start_bulk_gift_analysis", {"csv": csv})["jobId"]
        running = await running_past(store, job_id, 20)
        assert running is not None, "the job ended before the crash"
    # A desktop host opens a conversation on the default store beside it: it takes the job over.
    conversation = await asyncio.create_subprocess_exec(
        *GIFTGENIUS,
        *("serve", "--stdio", "--quiet", "--store", store, "--job-lease", LEASE),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        taken = await held_by_another(store, job_id, running.worker)
        assert taken.stage == RESUMED, "the conversation went on with the crashed server's job"
        assert conversation.stdin is not None
        conversation.stdin.close()  # the host ends the conversation
        async with asyncio.timeout(30):
            assert await conversation.wait() == 0
    finally:
        if conversation.returncode is None:
            conversation.kill()
            await conversation.wait()
    async with job_store(store) as jobs:
        job = await jobs.get(job_id)
        assert job is not None
        assert (job.status, job.worker, job.stage) == ("running", None, HANDED_BACK), (
            "handed back, not failed"
        )
    with giftgenius_http(store, "--job-lease", LEASE, measured=False) as served:
        deadline = time.monotonic() + 120
        ended = until_ended(served.url, job_id, deadline - time.monotonic())
        assert ended["status"] == "completed", ended.get("error")
        assert result_documents(served.url, job_id) == expected
    assert_one_gapless_history(ended["events"])
