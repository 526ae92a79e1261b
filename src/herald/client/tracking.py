"""Following one job's events exactly once, in order, whatever the transport did to them.

Events reach a client by more than one road: live notifications, replays of a resumed
SSE stream, and `get_job_status` backfills. Each road may repeat what another already
brought, and a replay may overtake a live event. The tracker is the one place that
turns this into the job's history: it keys events by their stable `eventId`, holds an
early event until the gap before it is filled, and checks every transition with the same
state machine the server uses, so a client never shows progress after an ending, a
second ending, or progress going backwards, even if a faulty server sent one.

It does no I/O, so the rules can be tested exhaustively on their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from herald.jobs.events import INPUT_OF_KIND, TERMINAL_KINDS, JobEvent
from herald.jobs.machine import IllegalTransition, JobInput, JobState, Outcome, apply


@dataclass(frozen=True, slots=True)
class RejectedEvent:
    """An event that was never delivered, and why."""

    event: JobEvent
    reason: str


class JobEventTracker:
    """Turns events of one job, in any order and with repeats, into its history.

    `accept` returns the events that became deliverable, in sequence order. Sequences
    count from 1 per job with no gaps, which is what lets the tracker tell "not yet"
    (a gap: hold the event) from "already" (at or below `last_sequence`: drop it).
    """

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.rejected: list[RejectedEvent] = []
        self._state = JobState()
        self._next = 1
        self._held: dict[int, JobEvent] = {}
        self._ended = False

    @property
    def last_sequence(self) -> int:
        """The highest sequence settled in order (delivered or rejected); 0 before any."""
        return self._next - 1

    @property
    def finished(self) -> bool:
        """Whether the terminal event has been delivered; nothing is delivered after it."""
        return self._ended

    @property
    def status(self) -> str:
        return self._state.status.value

    @property
    def percentage(self) -> float:
        return self._state.percentage

    @property
    def stage(self) -> str | None:
        return self._state.stage

    @property
    def waiting(self) -> int:
        """How many events are held for an earlier one that has not arrived yet."""
        return len(self._held)

    def accept(self, params: dict[str, Any]) -> list[JobEvent]:
        """Take one event's params (as notified or listed); return what is now deliverable."""
        try:
            event = JobEvent.from_params(params)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"not a job event: {params!r}") from exc
        if event.job_id != self.job_id:
            self.rejected.append(RejectedEvent(event, f"it belongs to job {event.job_id!r}"))
            return []
        if event.sequence < self._next or event.sequence in self._held:
            return []  # a repeat: the first copy already counts
        self._held[event.sequence] = event
        delivered: list[JobEvent] = []
        while (ready := self._held.pop(self._next, None)) is not None:
            self._next += 1
            reason = self._refusal(ready)
            if reason is None:
                delivered.append(ready)
            else:
                self.rejected.append(RejectedEvent(ready, reason))
        return delivered

    def _refusal(self, event: JobEvent) -> str | None:
        """Why `event` cannot follow what was delivered (None if it can); moves the state if it can."""
        if self._ended:
            if event.kind in TERMINAL_KINDS:
                return f"a second terminal event: the job already ended {self.status}"
            return f"the job already ended {self.status}; {event.kind} cannot follow"
        if event.kind == "created":
            return None if event.sequence == 1 else "a job is created only once, as its first event"
        job_input = INPUT_OF_KIND.get(event.kind)
        if job_input is None:
            return f"unknown event kind {event.kind!r}"
        percentage = event.payload.get("percentage") if job_input is JobInput.PROGRESS else None
        if percentage is not None and not isinstance(percentage, int | float):
            return f"progress percentage {percentage!r} is not a number"
        try:
            outcome, state = apply(self._state, job_input, percentage, event.payload.get("stage"))
        except IllegalTransition as exc:
            return str(exc)
        if outcome is Outcome.ABSORB:
            return "a second terminal event"
        self._state = state
        self._ended = state.status.terminal
        return None
