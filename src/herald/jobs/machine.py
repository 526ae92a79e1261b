"""The job state machine, as a table and one pure function.

Theory of operation
-------------------
A job is created `pending`, becomes `running` when a worker starts it, and ends
`completed`, `failed` or `cancelled`. It never goes back. Progress is reported only
while running, and its percentage never decreases. Terminal states absorb: the same
terminal input again changes nothing (a retried completion is harmless), while any other
input after the end is refused. A refused input raises `IllegalTransition` and leaves
the job as it was, so the mistake is caught where it is made, never on the wire.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class JobStatus(enum.StrEnum):
    """Where a job is; a `StrEnum`, so each status is also its stored and wire string."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL: Final = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})


class JobInput(enum.Enum):
    START = "start"
    PROGRESS = "progress"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"


class Outcome(enum.Enum):
    MOVE = "move"  # the input applies: record its event
    ABSORB = "absorb"  # a repeat of the terminal input that ended the job: nothing happens
    REFUSE = "refuse"  # illegal here


S, In, Out = JobStatus, JobInput, Outcome

#: (status, input) -> (outcome, next status). Every pair is listed.
TRANSITIONS: Final[dict[tuple[JobStatus, JobInput], tuple[Outcome, JobStatus]]] = {
    (S.PENDING, In.START): (Out.MOVE, S.RUNNING),
    (S.PENDING, In.PROGRESS): (Out.REFUSE, S.PENDING),
    (S.PENDING, In.COMPLETE): (Out.REFUSE, S.PENDING),
    (S.PENDING, In.FAIL): (Out.MOVE, S.FAILED),  # e.g. interrupted before it ever started
    (S.PENDING, In.CANCEL): (Out.MOVE, S.CANCELLED),
    (S.RUNNING, In.START): (Out.REFUSE, S.RUNNING),
    (S.RUNNING, In.PROGRESS): (Out.MOVE, S.RUNNING),
    (S.RUNNING, In.COMPLETE): (Out.MOVE, S.COMPLETED),
    (S.RUNNING, In.FAIL): (Out.MOVE, S.FAILED),
    (S.RUNNING, In.CANCEL): (Out.MOVE, S.CANCELLED),
    (S.COMPLETED, In.START): (Out.REFUSE, S.COMPLETED),
    (S.COMPLETED, In.PROGRESS): (Out.REFUSE, S.COMPLETED),
    (S.COMPLETED, In.COMPLETE): (Out.ABSORB, S.COMPLETED),
    (S.COMPLETED, In.FAIL): (Out.REFUSE, S.COMPLETED),
    (S.COMPLETED, In.CANCEL): (Out.REFUSE, S.COMPLETED),
    (S.FAILED, In.START): (Out.REFUSE, S.FAILED),
    (S.FAILED, In.PROGRESS): (Out.REFUSE, S.FAILED),
    (S.FAILED, In.COMPLETE): (Out.REFUSE, S.FAILED),
    (S.FAILED, In.FAIL): (Out.ABSORB, S.FAILED),
    (S.FAILED, In.CANCEL): (Out.REFUSE, S.FAILED),
    (S.CANCELLED, In.START): (Out.REFUSE, S.CANCELLED),
    (S.CANCELLED, In.PROGRESS): (Out.REFUSE, S.CANCELLED),
    (S.CANCELLED, In.COMPLETE): (Out.REFUSE, S.CANCELLED),
    (S.CANCELLED, In.FAIL): (Out.REFUSE, S.CANCELLED),
    (S.CANCELLED, In.CANCEL): (Out.ABSORB, S.CANCELLED),
}


class IllegalTransition(Exception):
    """An input the job's state does not allow; the job is unchanged."""


@dataclass(frozen=True, slots=True)
class JobState:
    """What the machine tracks of a job."""

    status: JobStatus = JobStatus.PENDING
    percentage: float = 0.0
    stage: str | None = None


def apply(
    state: JobState, event: JobInput, percentage: float | None = None, stage: str | None = None
) -> tuple[Outcome, JobState]:
    """The outcome of `event` on `state` and the state after it. Raises `IllegalTransition`."""
    outcome, status = TRANSITIONS[(state.status, event)]
    if outcome is Outcome.REFUSE:
        raise IllegalTransition(f"a {state.status.value} job cannot take {event.value}")
    if outcome is Outcome.ABSORB:
        return outcome, state
    if event is JobInput.PROGRESS:
        if percentage is None or not 0 <= percentage <= 100:
            raise IllegalTransition(f"progress must be a percentage from 0 to 100, not {percentage!r}")
        if percentage < state.percentage:
            raise IllegalTransition(f"progress cannot go back from {state.percentage}% to {percentage}%")
        return outcome, JobState(state.status, percentage, stage or state.stage)
    if event is JobInput.COMPLETE:
        return outcome, JobState(status, 100.0, state.stage)
    return outcome, JobState(status, state.percentage, state.stage)
