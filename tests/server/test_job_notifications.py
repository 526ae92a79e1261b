"""A job event becomes its notification, and a progress event of a job with a token its mirror too."""

from __future__ import annotations

from herald.jobs.events import JobEvent
from herald.protocol.messages import Notification
from herald.server.job_notifications import job_notifications

WHEN = "2026-01-01T00:00:00.000Z"
PROGRESS = JobEvent("j", 3, "progress", WHEN, {"percentage": 40.5, "stage": "match", "etaSeconds": 3})


def test_an_event_is_sent_as_itself() -> None:
    started = JobEvent("j", 2, "started", WHEN, {"status": "running"})
    assert job_notifications(started, "token") == (
        Notification(
            "notifications/job/started",
            {"eventId": "j:2", "type": "job.started", "jobId": "j", "timestamp": WHEN, "status": "running"},
        ),
    ), "only progress has a mirror"
    assert job_notifications(PROGRESS, None) == (Notification(PROGRESS.method, PROGRESS.to_params()),)


def test_progress_of_a_job_with_a_token_is_mirrored_after_the_event() -> None:
    assert job_notifications(PROGRESS, 7) == (
        Notification(PROGRESS.method, PROGRESS.to_params()),
        Notification(
            "notifications/progress", {"progressToken": 7, "progress": 40.5, "total": 100, "message": "match"}
        ),
    )
    quiet = JobEvent("j", 4, "progress", WHEN, {"percentage": 50, "stage": ""})
    assert job_notifications(quiet, "t")[1] == Notification(
        "notifications/progress", {"progressToken": "t", "progress": 50, "total": 100}
    ), "an empty stage says no message"
