"""A job as the stores keep it: its state, what started it, and how it ended.

A record has two parts that change at very different rates. What started the job (its
tool, owner, progress token and arguments, which may be a whole CSV file) is fixed when
it is created; its status (`STATUS_FIELDS`) changes with every event. Stores write the
first part once and only the second part afterwards, so a progress event costs the same
whatever the job was given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Final

from herald.jobs.machine import JobState, JobStatus


@dataclass(slots=True)
class JobRecord:
    job_id: str
    tool: str
    created_at: str
    updated_at: str
    status: str = JobStatus.PENDING.value
    percentage: float = 0.0
    stage: str | None = None
    eta_seconds: float | None = None
    #: The session (or connection) that started it: its events are delivered there.
    owner: str | None = None
    #: The `progressToken` of the starting call, mirrored with `notifications/progress`.
    progress_token: str | int | None = None
    result_uri: str | None = None
    summary: str | None = None
    error: dict[str, Any] | None = None
    #: The sequence number of the job's last event.
    sequence: int = 0
    #: The worker (a process that runs jobs) holding the job: it queued or runs it. While
    #: that worker's lease is live nobody else touches the job; once it lapses, recovery does.
    worker: str | None = None
    #: How long the job is kept once it has ended (an MCP task's ttl); None: the store's default.
    retain_seconds: float | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    #: The trace context of the call that created the job (`traceparent`, …), where telemetry
    #: was on: whichever worker runs the job reports its run in that trace.
    trace_context: dict[str, str] | None = None

    @property
    def state(self) -> JobState:
        return JobState(JobStatus(self.status), self.percentage, self.stage)

    @property
    def terminal(self) -> bool:
        return JobStatus(self.status).terminal

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobRecord:
        return cls(**data)


def epoch_seconds(timestamp: str) -> float:
    """A job's RFC 3339 timestamp (`updated_at`: for an ended job, when it ended) as epoch seconds."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


#: The fields events change; every other field is written once, when the job is created.
STATUS_FIELDS: Final = (
    "status",
    "percentage",
    "stage",
    "eta_seconds",
    "sequence",
    "result_uri",
    "summary",
    "error",
    "updated_at",
    "worker",
)
