"""The event log: every event a stream carries, written before it is sent.

A stream is named by its owner (`session`) and a name within it (`stream`). Positions
are per stream and start at 1, so "what followed position 5 of stream p3 of session S"
is a range read. Keeping the owner in the key is what makes a replay "for that session
only": the same event id presented by another session finds nothing.

A job event is stored once, in the job store. The log holds only its place in the
stream: a `JobEventReference` (the job and the event's sequence), no bytes, and the
stream renders the event from the job store when it sends or replays it. Its SSE id is
the event's own id (`jobId:sequence`), so `position_of_job_event` maps that id back to
the stream position a client resumes after. Every other message is stored as its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class JobEventReference:
    """Where a job event sits in a stream; the event itself is in the job store."""

    job_id: str
    sequence: int

    @property
    def event_id(self) -> str:
        """The event's own id, as `JobEvent.event_id` spells it."""
        return f"{self.job_id}:{self.sequence}"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as the log holds it: its position, and its bytes or the job event it stands for.

    A job event's row has no bytes (`data` is empty) and names the event in `job_event`.
    """

    position: int
    data: bytes = b""
    job_event: JobEventReference | None = None


class EventLog(Protocol):
    async def append(self, session: str, stream: str, data: bytes) -> int:
        """Store one event at the end of the stream and return its position."""

    async def append_job_event(self, session: str, stream: str, job_id: str, sequence: int) -> int:
        """Place a job event (by reference, no bytes) at the end of the stream; return its position."""

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        """Every event of the stream after `position`, oldest first."""

    async def position_of_job_event(
        self, session: str, stream: str, job_id: str, sequence: int
    ) -> int | None:
        """The position of that job event in the stream, or None if the stream does not hold it."""

    async def forget(self, session: str) -> None:
        """Drop everything the session's streams held (the session ended)."""

    async def forget_stream(self, session: str, stream: str) -> None:
        """Drop one stream's events (it finished long enough ago that nobody will resume it)."""

    async def aclose(self) -> None:
        """Release the backend."""
