"""What a job event says to the client that started the job, derived each time it is sent.

A job event is a fact stored once, in the job store. The notifications it becomes are
views of it, rendered here and nowhere else, by the live path (`Connection`) and by a
replay (the HTTP event log, which stores only a reference to the event): the event as
`notifications/job/<kind>`, then, for a `progress` event of a job started with a
`progressToken`, its MCP mirror `notifications/progress`. The mirror is never stored,
so it cannot disagree with the event it mirrors.
"""

from __future__ import annotations

from typing import Any

from herald.jobs.events import JobEvent
from herald.protocol.messages import Notification


def job_notifications(event: JobEvent, progress_token: str | int | None) -> tuple[Notification, ...]:
    """The notifications `event` is sent as, the event first; `progress_token` is the job's."""
    notification = Notification(event.method, event.to_params())
    if event.kind != "progress" or progress_token is None:
        return (notification,)
    params: dict[str, Any] = {
        "progressToken": progress_token,
        "progress": event.payload["percentage"],
        "total": 100,
    }
    if stage := event.payload.get("stage"):
        params["message"] = stage
    return notification, Notification("notifications/progress", params)
