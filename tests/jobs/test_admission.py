"""Job admission: every start is answered at once, but only `max_running` jobs run at a time.

The others stay `pending` in the store and start in creation order as slots free. Each
job here waits on its own gate, so the test decides when a slot frees; every check is on
which jobs are running, never on time.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from herald import Server
from herald.client import connect_http
from herald.runtime import JobContext, JobRunner
from herald.runtime.runner import SHUTTING_DOWN, default_max_running_jobs
from herald.stores.sqlite import SqliteJobStore
from herald.testing import InMemoryClient, connect
from herald.testing.http import serve_http
from tests.modern import META, headers_for


class Gated:
    """A server whose `gated` job n reports that it started, then waits for gate n."""

    def __init__(self, limit: int, store: SqliteJobStore | None = None) -> None:
        self.server = Server("admission")
        if store is not None:
            self.server.use_job_store(store)
        self.gates: dict[int, asyncio.Event] = {}
        self.started: dict[int, asyncio.Event] = {}
        self.order: list[int] = []

        @self.server.job()
        async def gated(ctx: JobContext, n: int) -> dict[str, Any]:
            """Waits for its gate."""
            self.order.append(n)
            self.started[n].set()
            await self.gates[n].wait()
            return {"n": n}

        self.server.jobs.runner.max_running = limit

    async def start(self, client: InMemoryClient, count: int) -> list[str]:
        ids = []
        for n in range(count):
            self.gates[n], self.started[n] = asyncio.Event(), asyncio.Event()
            answer = await client.call_tool("gated", {"n": n})
            assert answer["structuredContent"]["status"] == "pending", "admitted at once"
            ids.append(answer["structuredContent"]["jobId"])
        return ids

    async def statuses(self, ids: list[str]) -> list[str]:
        service = self.server.jobs.service
        return [(await service.get(job_id)).status for job_id in ids]

    async def until_started(self, n: int) -> None:
        async with asyncio.timeout(10):
            await self.started[n].wait()

    @property
    def runner(self) -> JobRunner:
        return self.server.jobs.runner


async def test_only_the_limit_runs_and_the_rest_start_in_creation_order() -> None:
    gated = Gated(limit=2)
    async with connect(gated.server) as client:
        ids = await gated.start(client, 5)
        await gated.until_started(0)
        await gated.until_started(1)
        assert await gated.statuses(ids) == ["running", "running", "pending", "pending", "pending"]
        assert (gated.runner.running, gated.runner.queued) == (2, 3)
        gated.gates[1].set()  # the second frees its slot first: the oldest waiting job takes it
        await gated.until_started(2)
        assert await gated.statuses(ids) == ["running", "completed", "running", "pending", "pending"]
        gated.gates[0].set()
        await gated.until_started(3)
        assert await gated.statuses(ids) == ["completed", "completed", "running", "running", "pending"]
        for n in (2, 3):
            gated.gates[n].set()
        await gated.until_started(4)
        gated.gates[4].set()
        for job_id in ids:
            await gated.runner.wait_ended(job_id)
        assert await gated.statuses(ids) == ["completed"] * 5
        assert gated.order == [0, 1, 2, 3, 4]


async def test_a_queued_job_can_be_cancelled_and_never_starts() -> None:
    gated = Gated(limit=1)
    async with connect(gated.server) as client:
        ids = await gated.start(client, 3)
        await gated.until_started(0)
        answer = await client.call_tool("cancel_job", {"jobId": ids[1]})
        assert "being cancelled" in answer["content"][0]["text"]
        assert await gated.statuses(ids) == ["running", "cancelled", "pending"]
        assert gated.runner.queued == 1
        gated.gates[0].set()
        await gated.until_started(2)
        gated.gates[2].set()
        await gated.runner.wait_ended(ids[2])
        assert await gated.statuses(ids) == ["completed", "cancelled", "completed"]
        assert gated.order == [0, 2], "the cancelled job never ran"
        kinds = [event.kind for event in await gated.server.jobs.service.reader.events_after(ids[1])]
        assert kinds == ["created", "cancelled"]


async def test_a_queued_task_can_be_cancelled() -> None:
    gated = Gated(limit=1)
    async with connect(gated.server) as client:
        (first,) = await gated.start(client, 1)
        await gated.until_started(0)
        gated.gates[1], gated.started[1] = asyncio.Event(), asyncio.Event()
        task = (await client.call_tool("gated", {"n": 1}, task={}))["task"]
        assert gated.runner.queued == 1
        cancelled = await client.request("tasks/cancel", {"taskId": task["taskId"]})
        assert cancelled["status"] == "cancelled"
        assert gated.runner.queued == 0
        gated.gates[0].set()
        await gated.runner.wait_ended(first)
        assert gated.order == [0]
        assert gated.runner.running == 0, "the freed slot found nothing to start"


async def test_shutdown_fails_queued_jobs_as_interrupted_like_running_ones() -> None:
    gated = Gated(limit=1)
    async with connect(gated.server) as client:
        ids = await gated.start(client, 3)
        await gated.until_started(0)
        await gated.runner.aclose()
        service = gated.server.jobs.service
        for job_id in ids:
            job = await service.get(job_id)
            assert job.status == "failed"
            assert job.error is not None
            assert (job.error["code"], job.error["message"]) == ("interrupted", SHUTTING_DOWN)
        kinds = [event.kind for event in await service.reader.events_after(ids[2])]
        assert kinds == ["created", "failed"], "a queued job never started"
        assert gated.order == [0]
        assert (gated.runner.running, gated.runner.queued) == (0, 0)


async def test_a_job_arriving_during_shutdown_is_refused_clearly() -> None:
    gated = Gated(limit=1)
    async with connect(gated.server) as client:
        await gated.runner.aclose()
        refused = await client.request_raw("tools/call", {"name": "gated", "arguments": {"n": 0}})
        assert refused["error"]["code"] == -32603
        assert "shutting down" in refused["error"]["message"]
        assert await gated.server.jobs.service.unfinished() == [], "no job is left pending"


async def test_a_launch_after_shutdown_began_fails_the_job() -> None:
    """The race `accepting` cannot close: a job created just as shutdown began."""
    gated = Gated(limit=1)
    async with connect(gated.server) as client:
        gated.gates[0], gated.started[0] = asyncio.Event(), asyncio.Event()
        service = gated.server.jobs.service
        original = service.create

        async def create_then_shut_down(*args: Any, **kwargs: Any) -> Any:
            job = await original(*args, **kwargs)
            await gated.runner.aclose()
            return job

        service.create = create_then_shut_down  # type: ignore[method-assign]  # the race, on cue
        refused = await client.request_raw("tools/call", {"name": "gated", "arguments": {"n": 0}})
        assert "shutting down" in refused["error"]["message"]
        (job_id,) = await service.reader.job_ids()
        job = await service.get(job_id)
        assert job.status == "failed"
        assert job.error is not None
        assert job.error["code"] == "interrupted"
        assert gated.order == []


def test_the_limit_is_at_least_one() -> None:
    server = Server("limits")
    with pytest.raises(ValueError, match="at least one"):
        server.jobs.runner.max_running = 0
    assert server.jobs.runner.max_running >= 2, "the default leaves room for more than one job"


def test_the_server_takes_the_limit_and_defaults_to_eight_per_core() -> None:
    assert Server("limited", max_running_jobs=3).jobs.runner.max_running == 3
    assert Server("default").jobs.runner.max_running == default_max_running_jobs()
    assert default_max_running_jobs() == 8 * (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="at least one job"):
        _ = Server("none", max_running_jobs=0).jobs.runner


async def test_one_client_may_have_only_so_many_jobs_at_once() -> None:
    """Past its cap a client's start is refused with words a model can act on; another client is not."""
    gated = Gated(limit=8)
    gated.server.max_jobs_per_owner = 2
    async with connect(gated.server) as client, connect(gated.server) as other:
        ids = await gated.start(client, 2)
        refused = await client.call_tool("gated", {"n": 2})
        assert refused["isError"] is True
        assert "you have 2 jobs running or waiting" in refused["content"][0]["text"]
        assert "cancel_job" in refused["content"][0]["text"]
        assert len(await gated.server.jobs.service.unfinished()) == 2, "nothing was created"
        gated.gates[2], gated.started[2] = asyncio.Event(), asyncio.Event()
        assert (await other.call_tool("gated", {"n": 2}))["structuredContent"]["status"] == "pending"
        gated.gates[0].set()
        await gated.runner.wait_ended(ids[0])
        gated.gates[3], gated.started[3] = asyncio.Event(), asyncio.Event()
        again = await client.call_tool("gated", {"n": 3})
        assert again["structuredContent"]["status"] == "pending", "a job ended: there is room again"
        for gate in gated.gates.values():
            gate.set()


async def test_a_burst_of_starts_cannot_pass_the_cap_together(tmp_path: Path) -> None:
    """Each start is counted before it awaits the store, so six at once admit two."""
    gated = Gated(limit=8, store=SqliteJobStore(tmp_path / "jobs.db"))
    gated.server.max_jobs_per_owner = 2
    async with connect(gated.server) as client:
        for n in range(6):
            gated.gates[n], gated.started[n] = asyncio.Event(), asyncio.Event()
        answers = await asyncio.gather(*(client.call_tool("gated", {"n": n}) for n in range(6)))
        admitted = [answer for answer in answers if not answer.get("isError")]
        assert len(admitted) == 2, answers
        for gate in gated.gates.values():
            gate.set()


async def test_the_server_queues_only_so_many_jobs_from_everyone_together() -> None:
    gated = Gated(limit=1)
    gated.server.max_waiting_jobs = 2
    async with connect(gated.server) as first, connect(gated.server) as second:
        ids = await gated.start(first, 1)
        await gated.until_started(0)
        for n in (1, 2):
            gated.gates[n], gated.started[n] = asyncio.Event(), asyncio.Event()
            assert (await second.call_tool("gated", {"n": n}))["structuredContent"]["status"] == "pending"
        refused = await first.call_tool("gated", {"n": 3})
        assert refused["isError"] is True
        assert "already has 2 jobs waiting to run" in refused["content"][0]["text"]
        assert len(await gated.server.jobs.service.unfinished()) == 3, "nothing was created"
        gated.gates[0].set()
        await gated.runner.wait_ended(ids[0])
        await gated.until_started(1)
        gated.gates[3], gated.started[3] = asyncio.Event(), asyncio.Event()
        again = await first.call_tool("gated", {"n": 3})
        assert again["structuredContent"]["status"] == "pending", "one started: there is room again"
        for gate in gated.gates.values():
            gate.set()


async def start_sessionless(http: httpx.AsyncClient, url: str, n: int) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": "gated", "arguments": {"n": n}, "_meta": META},
    }
    answer = await http.post(url, json=body, headers=headers_for("tools/call", "gated"))
    result: dict[str, Any] = answer.json()["result"]
    return result


async def test_clients_without_a_token_are_counted_by_address_with_or_without_sessions() -> None:
    """Neither requests without a session nor a fresh session escape the cap of their address."""
    gated = Gated(limit=8)
    gated.server.max_jobs_per_owner = 2
    for n in range(4):
        gated.gates[n], gated.started[n] = asyncio.Event(), asyncio.Event()
    async with serve_http(gated.server) as (url, _app), httpx.AsyncClient(timeout=30) as http:
        first = await start_sessionless(http, url, 0)
        second = await start_sessionless(http, url, 1)
        assert [first["structuredContent"]["status"], second["structuredContent"]["status"]] == [
            "pending"
        ] * 2
        refused = await start_sessionless(http, url, 2)
        assert refused["isError"] is True, "a third request without a session"
        async with connect_http(url) as fresh:
            in_a_session = await fresh.call_tool("gated", {"n": 3})
        assert in_a_session["isError"] is True, "a fresh session from the same address"
        assert "you have 2 jobs running or waiting" in in_a_session["content"][0]["text"]
        gated.gates[0].set()
        await gated.runner.wait_ended(first["structuredContent"]["jobId"])
        again = await start_sessionless(http, url, 2)
        assert again["structuredContent"]["status"] == "pending", "a job ended: there is room again"
        for gate in gated.gates.values():
            gate.set()


def test_a_job_knob_set_late_takes_effect_or_says_it_cannot() -> None:
    server = Server("late")
    jobs = server.jobs
    runner = jobs.runner
    jobs.max_running = 3
    jobs.retention_seconds = 60
    assert (runner.max_running, runner.membership.retention_seconds) == (3, 60)
    assert jobs.max_running == 3
    jobs.max_running = None
    assert runner.max_running == default_max_running_jobs()
    with pytest.raises(RuntimeError, match="choose the job lease before the server starts jobs"):
        jobs.lease_seconds = 1
    with pytest.raises(RuntimeError, match="before the server starts jobs"):
        jobs.takes_jobs = False
    assert (runner.membership.lease_seconds, runner.takes_jobs) == (jobs.lease_seconds, True)
