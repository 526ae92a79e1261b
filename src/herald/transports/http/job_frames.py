"""Job events on an SSE stream: one id per event, and the event stored only in the job store.

A session's GET stream logs a job event as a `JobEventReference` (no bytes) that fixes
its place among the stream's other messages. Its frame is rendered by
`job_notifications` every time it is sent: live from the event in hand, on a replay from
the job store. The frame's SSE id is the event's own id (`jobId:sequence`, the id
`get_job_status` pages by), and a derived `notifications/progress` follows it in the same
frame without an id of its own, so the last id a client saw after either is the event's
and resuming after it misses neither. Every other event's id is `stream.position`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.protocol.codec import encode
from herald.protocol.sse import encode_event
from herald.server.job_notifications import job_notifications
from herald.stores.eventlog import JobEventReference


class JobEventSource(Protocol):
    """Where a replay reads job events back from: the job store."""

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]: ...

    async def job_ids(self, owner: str | None = None) -> list[str]: ...


#: Finds the job store when a replay first needs it (a session may never see a job).
JobEvents = Callable[[], JobEventSource]


class JobFrame(bytes):
    """A job event's SSE frame, which knows its stream position (its id does not say it)."""

    position: int


def job_event_frame(event: JobEvent, progress_token: str | int | None, position: int) -> JobFrame:
    """The frame of a job event at `position`: the event with its id, then its mirrors without one."""
    first, *mirrors = job_notifications(event, progress_token)
    frame = JobFrame(
        b"".join(
            [
                encode_event(encode(first), event_id=event.event_id),
                *(encode_event(encode(mirror)) for mirror in mirrors),
            ]
        )
    )
    frame.position = position
    return frame


async def read_job_events(
    wanted: list[JobEventReference], jobs: JobEvents | None
) -> dict[JobEventReference, tuple[JobEvent, str | int | None]]:
    """Each wanted event with its job's progress token, read from the job store.

    Each job is read once (its events from the first one wanted, and its progress token),
    however many of its events a replay holds.
    """
    if not wanted or jobs is None:
        return {}
    source = jobs()
    wanted_set = set(wanted)
    first: dict[str, int] = {}
    for reference in wanted:
        first[reference.job_id] = min(reference.sequence, first.get(reference.job_id, reference.sequence))
    found: dict[JobEventReference, tuple[JobEvent, str | int | None]] = {}
    for job_id, sequence in first.items():
        job = await source.get(job_id)
        token = job.progress_token if job is not None else None
        for event in await source.events_after(job_id, sequence - 1):
            if (reference := JobEventReference(job_id, event.sequence)) in wanted_set:
                found[reference] = (event, token)
    return found
