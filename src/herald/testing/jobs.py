"""Waiting for a job in a test: for its end or for one of its events, heard, never polled.

A test that polls `get_job_status` waits out the `pollAfterMs` a client is asked to wait
(half a second) however soon the job ended. These listen on the server's jobs
(`herald.runtime.Jobs`) instead, so they return as soon as the event is told.
"""

from __future__ import annotations

import asyncio

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.runtime.jobs import Jobs
from herald.server.app import Server

__all__ = ["job_ended", "job_event"]


def _jobs(of: Server | Jobs) -> Jobs:
    return of.jobs if isinstance(of, Server) else of


async def job_ended(of: Server | Jobs, job_id: str) -> JobRecord:
    """The job once it has ended (bound the wait with `asyncio.timeout`)."""
    return await _jobs(of).until_ended(job_id)


async def job_event(of: Server | Jobs, job_id: str, kind: str) -> JobEvent:
    """The job's first event of `kind` (`progress`, `completed`…), already stored or still to come."""
    heard: asyncio.Future[JobEvent] = asyncio.get_running_loop().create_future()

    def listener(_: JobRecord, event: JobEvent) -> None:
        if event.kind == kind and not heard.done():
            heard.set_result(event)

    jobs = _jobs(of)
    stop = jobs.add_listener(listener, job_id=job_id)
    try:
        for event in await jobs.reader.events_after(job_id):
            if event.kind == kind:
                return event
        return await heard
    finally:
        stop()
