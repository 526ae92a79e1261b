"""Job events: past-tense facts, and their wire form and schemas.

On the wire each event is a notification `notifications/job/<kind>` whose params are
flat: `eventId` (stable: a replayed event carries the same id), `type` ("job.<kind>"),
`jobId`, `timestamp` (RFC 3339, UTC), then the payload of its type. The JSON Schema of
every type is published by the server, and the tests validate what they see against it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from herald.jobs.machine import JobInput


class EventKind(enum.StrEnum):
    """What an event says happened; a `StrEnum`, so each kind is also its wire string."""

    CREATED = "created"
    STARTED = "started"
    PROGRESS = "progress"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


KINDS: Final = tuple(kind.value for kind in EventKind)
TERMINAL_KINDS: Final = frozenset({EventKind.COMPLETED, EventKind.FAILED, EventKind.CANCELLED})
#: The state machine's input each kind of event is; `created` is a job's birth, not an input.
INPUT_OF_KIND: Final[dict[str, JobInput]] = {
    EventKind.STARTED: JobInput.START,
    EventKind.PROGRESS: JobInput.PROGRESS,
    EventKind.COMPLETED: JobInput.COMPLETE,
    EventKind.FAILED: JobInput.FAIL,
    EventKind.CANCELLED: JobInput.CANCEL,
}


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One event of one job. `sequence` orders a job's events from 1."""

    job_id: str
    sequence: int
    kind: str
    timestamp: str
    payload: dict[str, Any]

    @property
    def event_id(self) -> str:
        return f"{self.job_id}:{self.sequence}"

    @property
    def method(self) -> str:
        return f"notifications/job/{self.kind}"

    def to_params(self) -> dict[str, Any]:
        return {
            "eventId": self.event_id,
            "type": f"job.{self.kind}",
            "jobId": self.job_id,
            "timestamp": self.timestamp,
            **self.payload,
        }

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> JobEvent:
        job_id, _, sequence = str(params["eventId"]).rpartition(":")
        payload = {k: v for k, v in params.items() if k not in ("eventId", "type", "jobId", "timestamp")}
        return cls(
            job_id, int(sequence), str(params["type"]).removeprefix("job."), params["timestamp"], payload
        )


def timestamp(now: datetime | None = None) -> str:
    """RFC 3339 in UTC with milliseconds, e.g. 2026-11-30T05:17:36.123Z."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


#: How a job's failure is told everywhere (events, status, task results): a code, a message
#: a person can read, and a hint at what to do.
ERROR_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "hint": {"type": "string"},
    },
    "required": ["code", "message"],
    "additionalProperties": False,
}

_COMMON: Final[dict[str, Any]] = {
    "_meta": {"type": "object"},  # every MCP notification may carry it (e.g. a subscription id)
    "eventId": {"type": "string", "pattern": "^.+:[0-9]+$"},
    "jobId": {"type": "string", "minLength": 1},
    "timestamp": {
        "type": "string",
        "format": "date-time",
        "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$",
    },
}

_PAYLOADS: Final[dict[str, tuple[dict[str, Any], list[str]]]] = {
    "created": ({"tool": {"type": "string"}, "status": {"const": "pending"}}, ["tool", "status"]),
    "started": ({"status": {"const": "running"}}, ["status"]),
    "progress": (
        {
            "percentage": {"type": "number", "minimum": 0, "maximum": 100},
            "stage": {"type": "string"},
            "etaSeconds": {"type": "number", "minimum": 0},
        },
        ["percentage", "stage"],
    ),
    "completed": (
        {
            "status": {"const": "completed"},
            "resultResourceId": {"type": "string", "minLength": 1},
            "summary": {"type": "string"},
        },
        ["status", "resultResourceId"],
    ),
    "failed": (
        {
            "status": {"const": "failed"},
            "error": ERROR_SCHEMA,
        },
        ["status", "error"],
    ),
    "cancelled": ({"status": {"const": "cancelled"}, "reason": {"type": "string"}}, ["status"]),
}


def event_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (2020-12) of the params of one event type."""
    properties, required = _PAYLOADS[kind]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"herald://schemas/job-events/{kind}",
        "title": f"job.{kind}",
        "type": "object",
        "properties": {"type": {"const": f"job.{kind}"}, **_COMMON, **properties},
        "required": ["eventId", "type", "jobId", "timestamp", *required],
        "additionalProperties": False,
    }


def all_schemas() -> dict[str, Any]:
    """Every event type's schema, keyed by its `type`."""
    return {f"job.{kind}": event_schema(kind) for kind in KINDS}
