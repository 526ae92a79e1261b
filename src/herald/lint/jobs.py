"""The job-event rules: the same fields, schemas and state machine a herald server keeps.

Events of one job may reach a log more than once (a resumed stream, two listeners): an
`eventId` seen before with the same content is a repeat and is skipped, the way a client
de-duplicates; with other content it is a conflict. Every other event goes through
`herald.jobs.machine.apply`, the state machine the server itself writes by. A job first
seen after its birth (the log began mid-job) is taken as the event shows it, not judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import jsonschema_rs
import orjson

from herald.jobs.events import INPUT_OF_KIND, all_schemas
from herald.jobs.machine import IllegalTransition, JobState, JobStatus, apply
from herald.lint.bounded import Recent

PREFIX: Final = "notifications/job/"
#: Jobs followed at once, jobs remembered as ended, and event ids remembered.
JOBS_FOLLOWED: Final = 16_384
EVENTS_REMEMBERED: Final = 4096

_REQUIRED: Final = ("eventId", "jobId", "timestamp", "type")

Report = Callable[[str, str], None]


class JobEventRules:
    """Checks `notifications/job/*` events; `report(rule_id, message)` is told what is wrong."""

    def __init__(self) -> None:
        self._validators = {
            kind: jsonschema_rs.validator_for(schema) for kind, schema in all_schemas().items()
        }
        self._jobs: Recent[str, JobState] = Recent(JOBS_FOLLOWED)
        self._ended: Recent[str, str] = Recent(JOBS_FOLLOWED)
        self._seen: Recent[str, int] = Recent(EVENTS_REMEMBERED)

    def trim(self) -> None:
        for memory in (self._jobs, self._ended, self._seen):
            memory.trim()

    def check(self, method: str, params: Any, report: Report) -> None:
        kind = method[len(PREFIX) :]
        if not isinstance(params, dict):
            report("jobs/missing-field", f"{method} has no params object")
            return
        missing = [name for name in _REQUIRED if not isinstance(params.get(name), str)]
        if missing:
            report("jobs/missing-field", f"{method} lacks {', '.join(missing)}")
            return
        if params["type"] != f"job.{kind}":
            report("jobs/missing-field", f"{method} says type {params['type']!r}, not 'job.{kind}'")
            return
        event_id = params["eventId"]
        fingerprint = hash(orjson.dumps(params, option=orjson.OPT_SORT_KEYS))
        seen = self._seen.get(event_id)
        if seen is not None:
            if seen != fingerprint:
                report("jobs/event-id-conflict", f"event {event_id} came again with other content")
            return  # a repeat: delivery is at least once
        self._seen[event_id] = fingerprint
        validator = self._validators.get(params["type"])
        if validator is not None and not validator.is_valid(params):
            first = next(iter(validator.iter_errors(params)))
            report("jobs/schema", f"{params['type']} event {event_id}: {first.message}")
            return
        self._transition(kind, params, report)

    def _transition(self, kind: str, params: dict[str, Any], report: Report) -> None:
        job_id, event_id = params["jobId"], params["eventId"]
        ended = self._ended.get(job_id)
        if ended is not None:
            if kind != ended:  # the same ending again is absorbed, like the machine does
                report("jobs/after-terminal", f"job {job_id} had {ended}; then came {kind} ({event_id})")
            return
        state = self._jobs.get(job_id)
        if kind == "created":
            if state is not None:
                report("jobs/illegal-transition", f"job {job_id} was created twice ({event_id})")
            else:
                self._jobs[job_id] = JobState()
            return
        percentage = params.get("percentage")
        if state is None:  # joined mid-job: start from what this event implies
            state = JobState(JobStatus.RUNNING if kind != "started" else JobStatus.PENDING)
        elif kind == "progress" and isinstance(percentage, int | float) and percentage < state.percentage:
            report(
                "jobs/progress-backwards",
                f"job {job_id} went back from {state.percentage:g}% to {percentage:g}% ({event_id})",
            )
            return
        try:
            _, state = apply(state, INPUT_OF_KIND[kind], percentage, params.get("stage"))
        except IllegalTransition as illegal:
            report("jobs/illegal-transition", f"job {job_id}, event {event_id}: {illegal}")
            return
        if state.status.terminal:
            self._jobs.pop(job_id, None)
            self._ended[job_id] = kind
        else:
            self._jobs[job_id] = state
