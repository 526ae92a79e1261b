"""`subscriptions/listen` (2026-07-28): a long-lived SSE stream of the changes a client wants.

The first frame acknowledges the subscription with the filter the server agreed to
(what it asked for, less what the server does not offer). Every frame carries the
subscription id (the listen request's id) in `params._meta`. The stream lives until
the client closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.protocol.codec import encode
from herald.protocol.messages import Notification
from herald.protocol.sse import encode_comment, encode_event
from herald.server.app import Server
from herald.server.jobs import JOB_EVENTS_EXTENSION, JOB_EVENTS_FILTER
from herald.server.scope import RequestScope
from herald.transports.http.asgi import Receive, Send, end_body, send_body, start_stream, wait_for_disconnect

SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"

#: Filter flag -> (the list-changed notification it selects, the capability that must offer it).
LIST_FLAGS = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources"),
}


def agreed_filter(server: Server, wanted: dict[str, Any]) -> dict[str, Any]:
    capabilities = server.capabilities()
    agreed: dict[str, Any] = {
        flag: True
        for flag, (_, capability) in LIST_FLAGS.items()
        if wanted.get(flag) and capabilities.get(capability, {}).get("listChanged")
    }
    jobs = wanted.get(JOB_EVENTS_FILTER)
    if jobs and JOB_EVENTS_EXTENSION in capabilities.get("extensions", {}):
        ids = jobs.get("jobIds") if isinstance(jobs, dict) else None
        agreed[JOB_EVENTS_FILTER] = (
            {"jobIds": [i for i in ids if isinstance(i, str)]} if isinstance(ids, list) else True
        )
    uris = wanted.get("resourceSubscriptions")
    if isinstance(uris, list) and capabilities.get("resources", {}).get("subscribe"):
        agreed["resourceSubscriptions"] = [uri for uri in uris if isinstance(uri, str)]
    return agreed


async def serve_listen(
    server: Server,
    scope: RequestScope,
    receive: Receive,
    send: Send,
    keepalive: float,
) -> None:
    subscription_id = scope.request.id
    agreed = agreed_filter(server, scope.params.get("notifications") or {})
    methods = {LIST_FLAGS[flag][0] for flag in agreed if flag in LIST_FLAGS}
    uris = set(agreed.get("resourceSubscriptions", []))
    frames: asyncio.Queue[bytes] = asyncio.Queue()

    def frame(method: str, params: dict[str, Any]) -> bytes:
        params = {**params, "_meta": {SUBSCRIPTION_KEY: subscription_id}}
        return encode_event(encode(Notification(method, params)))

    def on_notification(notification: Notification, uri: str | None) -> None:
        if (uri is None and notification.method in methods) or (uri is not None and uri in uris):
            frames.put_nowait(frame(notification.method, notification.params or {}))

    jobs = agreed.get(JOB_EVENTS_FILTER)
    job_ids = set(jobs["jobIds"]) if isinstance(jobs, dict) else None

    def on_job_event(job: JobRecord, event: JobEvent) -> None:
        if jobs and (job_ids is None or job.job_id in job_ids):
            frames.put_nowait(frame(event.method, event.to_params()))

    stop_listening = server.add_listener(on_notification)
    stop_job_events = server.add_job_listener(on_job_event)
    disconnected = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await start_stream(send)
        await send_body(send, frame("notifications/subscriptions/acknowledged", {"notifications": agreed}))
        while not disconnected.done():
            getter = asyncio.ensure_future(frames.get())
            done, _ = await asyncio.wait(
                {getter, disconnected}, timeout=keepalive, return_when=asyncio.FIRST_COMPLETED
            )
            if getter in done:
                await send_body(send, getter.result())
                continue
            getter.cancel()
            if not done:
                await send_body(send, encode_comment("keep-alive"))
    finally:
        stop_listening()
        stop_job_events()
        disconnected.cancel()
        with contextlib.suppress(Exception):
            await end_body(send)
