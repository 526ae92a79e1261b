"""A server that stops on purpose fails its running jobs as `interrupted`; it never cancels them.

Only `cancel_job` or `tasks/cancel` is a cancellation. A job cut short by SIGTERM, the end
of stdin or `Server.stop_jobs` was not asked to stop and can simply be started again, so it
ends `failed` with code `interrupted` and a hint saying so, and with exactly one ending.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

from herald import Server
from herald.jobs.events import TERMINAL_KINDS
from herald.runtime import JobContext
from herald.runtime.runner import SHUTTING_DOWN
from herald.stores.sqlite import SqliteJobStore
from herald.testing import connect
from tests.servers import giftgenius_http
from tests.stateless import structured


def blocking_server(store: SqliteJobStore, running: asyncio.Event) -> Server:
    server = Server("shutdown")
    server.use_job_store(store)

    @server.job()
    async def forever(ctx: JobContext) -> dict[str, Any]:
        """Reports once, then waits for a stop that only the server can bring."""
        await ctx.report_progress(10, "waiting")
        running.set()
        await asyncio.Event().wait()
        return {}

    return server


async def test_stopping_the_server_interrupts_a_running_job(tmp_path: Path) -> None:
    running = asyncio.Event()
    server = blocking_server(SqliteJobStore(tmp_path / "jobs.db"), running)
    async with connect(server) as client:
        job_id = (await client.call_tool("forever"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await running.wait()
        await server.stop_jobs()
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    try:
        job = await reopened.get(job_id)
        assert job is not None
        assert job.status == "failed"
        assert job.error == {
            "code": "interrupted",
            "message": SHUTTING_DOWN,
            "hint": "Start the job again; its earlier events stay available.",
        }
        kinds = [event.kind for event in await reopened.events_after(job_id)]
        assert kinds == ["created", "started", "progress", "failed"]
        assert await reopened.unfinished() == [], "nothing is left for the next start to recover"
    finally:
        await reopened.aclose()


async def test_an_explicit_cancel_is_still_a_cancellation(tmp_path: Path) -> None:
    running = asyncio.Event()
    server = blocking_server(SqliteJobStore(tmp_path / "jobs.db"), running)
    async with connect(server) as client:
        job_id = (await client.call_tool("forever"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await running.wait()
        await client.call_tool("cancel_job", {"jobId": job_id})
        await server.stop_jobs()  # waits for the job to record its ending, whatever it is
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    try:
        events = await reopened.events_after(job_id)
        assert [event.kind for event in events][-1] == "cancelled"
        assert events[-1].payload["reason"] == "cancelled on request"
        assert sum(event.kind in TERMINAL_KINDS for event in events) == 1
    finally:
        await reopened.aclose()


def csv_of(rows: int) -> str:
    """Enough distinct rows to keep the bulk analysis busy for several seconds."""
    lines = ["name,department,interests,budget"]
    lines += [f"Person {n},Dept {n % 7},hiking;coffee,{20 + n % 80}.{n % 97:02d}" for n in range(rows)]
    return "\n".join(lines) + "\n"


def test_sigterm_fails_a_running_bulk_job_as_interrupted(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with giftgenius_http(store) as served:
        job_id = structured(served.url, "start_bulk_gift_analysis", {"csv": csv_of(20_000)})["jobId"]
        deadline = time.monotonic() + 30
        while True:  # wait for the job to be under way: SIGTERM must catch it running
            before = structured(served.url, "get_job_status", {"jobId": job_id})
            if before["status"] == "running" and before["stage"] is not None:
                break
            assert before["pollAfterMs"] is not None, f"the job ended before SIGTERM: {before}"
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(timeout=30)
    with giftgenius_http(store) as served:
        after = structured(served.url, "get_job_status", {"jobId": job_id})
    assert after["status"] == "failed"
    assert after["error"]["code"] == "interrupted"
    assert after["error"]["message"] == SHUTTING_DOWN, "recorded at shutdown, not recovered at start"
    assert after["error"]["hint"]
    kinds = [event["type"].removeprefix("job.") for event in after["events"]]
    assert [kind for kind in kinds if kind in TERMINAL_KINDS] == ["failed"], kinds
    assert "cancelled" not in kinds
