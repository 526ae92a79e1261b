"""`subscriptions/listen` without a transport: what a listen costs, and that it ends whole."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import herald.server.subscriptions
from herald import Server
from herald.protocol.codec import Outgoing
from herald.protocol.messages import Notification, Request
from herald.protocol.versions import Era
from herald.runtime import JobContext
from herald.server.handlers import listen
from herald.server.jobs import JOB_EVENTS_FILTER
from herald.server.outbox import Outbox
from herald.server.scope import RequestScope
from herald.server.subscriptions import Subscription
from tests.calls import calls_into

IDLE = 1000


def jobs_server() -> Server:
    server = Server("listens")

    @server.job()
    async def quick(ctx: JobContext) -> dict[str, int]:
        """Finishes at once."""
        return {"done": 1}

    return server


async def test_a_job_event_costs_the_same_with_a_thousand_idle_listens() -> None:
    """Listens are filed under the jobs they name and the owner they speak for: an event
    runs the subscription code of its own followers only, however many listen for others."""
    server = jobs_server()
    service = server.jobs.service
    work: dict[int, collections.Counter[str]] = {}
    heard: dict[int, dict[str, list[str]]] = {}
    for idle in (0, IDLE):
        stops = [
            Subscription(server, n, {JOB_EVENTS_FILTER: {"jobIds": [f"never-{idle}-{n}"]}}).open(_ignore)
            for n in range(idle // 2)
        ]
        stops += [
            Subscription(server, n, {JOB_EVENTS_FILTER: True}, owner=f"other-{n}").open(_ignore)
            for n in range(idle // 2)
        ]
        job = await service.create("quick", {}, owner="me", progress_token=None)
        followed = Subscription(server, "followed", {JOB_EVENTS_FILTER: {"jobIds": [job.job_id]}})
        mine = Subscription(server, "mine", {JOB_EVENTS_FILTER: True}, owner="me")
        sent = Sent()
        stops += [followed.open(sent.send), mine.open(sent.send)]
        await followed.replay(service.reader, sent)  # `created`, once, before what is live
        with calls_into(herald.server.subscriptions) as counted:
            await service.start(job.job_id)
        work[idle] = counted
        heard[idle] = {}
        for note in sent:
            heard[idle].setdefault(_id(note), []).append(note.method)
        for stop in stops:
            stop()
    assert work[IDLE] == work[0], "the work per event does not grow with idle listens"
    assert sum(work[0].values()) > 0, "the followers did hear the event"
    assert heard[IDLE] == heard[0], "and what is heard is the same"
    assert heard[0] == {
        "followed": ["notifications/job/created", "notifications/job/started"],
        "mine": ["notifications/job/started"],
    }


async def test_a_listen_stops_hearing_when_it_ends() -> None:
    server = jobs_server()
    service = server.jobs.service
    job = await service.create("quick", {}, owner="me", progress_token=None)
    sent: list[Notification] = []
    stop = Subscription(server, 1, {JOB_EVENTS_FILTER: {"jobIds": [job.job_id]}}).open(sent.append)
    stop()
    await service.start(job.job_id)
    assert sent == []
    assert job.job_id not in server.jobs._named, "the index forgets a job nobody follows"


class Sent(list[Notification], Outbox):
    """An outbox that keeps what it is sent."""

    def send(self, message: Outgoing) -> None:
        assert isinstance(message, Notification)
        self.append(message)

    async def drain(self) -> None:
        return None


def _ignore(_: Notification) -> None:
    raise AssertionError("an idle listen heard an event of a job it does not follow")


def _id(notification: Notification) -> Any:
    return (notification.params or {})["_meta"]["io.modelcontextprotocol/subscriptionId"]


class Stalled(Sent):
    """An outbox whose client reads nothing: it takes a message, then has no more room."""

    def __init__(self) -> None:
        super().__init__()
        self.full = asyncio.Event()

    async def drain(self) -> None:
        self.full.set()
        await asyncio.Event().wait()


async def test_a_listen_cancelled_while_it_replays_stops_hearing() -> None:
    """A listen whose client stops reading ends by cancellation in the middle of its replay;
    it must not go on hearing (and queueing) the job's events after it has ended."""
    server = jobs_server()
    service = server.jobs.service
    job = await service.create("quick", {}, owner=None, progress_token=None)
    params = {"notifications": {JOB_EVENTS_FILTER: {"jobIds": [job.job_id]}}}
    outbox = Stalled()
    scope = RequestScope(
        request=Request("listen", "subscriptions/listen", params),
        version="2026-07-28",
        era=Era.MODERN,
        client_capabilities={},
        client_info=None,
        outbox=outbox,
    )
    async with asyncio.timeout(5), asyncio.TaskGroup() as group:
        listening = group.create_task(listen(server, scope))
        await outbox.full.wait()  # the replay waits for room
        listening.cancel()
    await service.start(job.job_id)
    assert job.job_id not in server.jobs._named, "the ended listen stopped hearing"
    assert [note.method for note in outbox] == [
        "notifications/subscriptions/acknowledged",
        "notifications/job/created",
    ]
