"""`subscriptions/listen` (2026-07-28), independent of the transport.

A listen request names the changes it wants; the server agrees to the part it offers
(list changes it declares, resource updates, and job events where jobs exist), first
sends `notifications/subscriptions/acknowledged` with the agreed filter, then every
matching notification. Each carries the subscription id (the listen request's id) in
`params._meta`. HTTP streams them as SSE until the client disconnects; stdio sends them
on the stream until the client cancels the request.

The agreed filter is the spec's `SubscriptionFilter`, in the acknowledgement's
`params.notifications`: the part of the request the server honours, never more. An
extension's key sits beside the spec's four, as the Tasks extension (SEP-2663) puts its
`taskIds` there. Clients that read the filter with a closed schema drop such keys: the
TypeScript SDK's `listen()` (`@modelcontextprotocol/client` 2.4.0) reports `honoredFilter`
as `{}` when only `io.herald/jobEvents` was honoured, though the key is on the wire.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.jobs.service import JobListener
from herald.protocol.messages import Notification, RequestId
from herald.protocol.versions import Era
from herald.server.jobs import JOB_EVENTS_EXTENSION, JOB_EVENTS_FILTER

SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
#: Hears a server-initiated notification, with the resource URI of a resource update.
NotificationListener = Callable[[Notification, str | None], None]

#: Filter flag -> (the list-changed notification it selects, the capability that must offer it).
LIST_FLAGS = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources"),
}


class NotificationSource(Protocol):
    """What a subscription follows on the server: what it declares and what it announces."""

    def capabilities(self, era: Era = Era.HANDSHAKE) -> dict[str, Any]: ...

    def add_listener(self, listener: NotificationListener) -> Callable[[], None]: ...

    def add_job_listener(self, listener: JobListener, *, owner: str | None = None) -> Callable[[], None]: ...


def agreed_filter(server: NotificationSource, wanted: dict[str, Any]) -> dict[str, Any]:
    """The part of a requested filter the server offers.

    A key is honoured only when its value has the type the filter defines (`true` for a
    flag, a list for URIs or job ids); a malformed one is left out, never widened.
    """
    capabilities = server.capabilities(Era.STATELESS)
    agreed: dict[str, Any] = {
        flag: True
        for flag, (_, capability) in LIST_FLAGS.items()
        if wanted.get(flag) is True and capabilities.get(capability, {}).get("listChanged")
    }
    jobs = job_filter(wanted.get(JOB_EVENTS_FILTER))
    if jobs is not None and JOB_EVENTS_EXTENSION in capabilities.get("extensions", {}):
        agreed[JOB_EVENTS_FILTER] = jobs
    uris = wanted.get("resourceSubscriptions")
    if isinstance(uris, list) and capabilities.get("resources", {}).get("subscribe"):
        agreed["resourceSubscriptions"] = [uri for uri in uris if isinstance(uri, str)]
    return agreed


def job_filter(wanted: Any) -> bool | dict[str, list[str]] | None:
    """What an `io.herald/jobEvents` value asks for: every job (`True`), some, or nothing (None).

    `true` and an object without `jobIds` mean every job; `{"jobIds": [...]}` the jobs
    named (its non-string entries dropped). A `jobIds` that is not a list names no job the
    server can tell, so it is not honoured, rather than read as every job.
    """
    if wanted is True:
        return True
    if not isinstance(wanted, dict):
        return None
    if "jobIds" not in wanted:
        return True
    ids = wanted["jobIds"]
    if not isinstance(ids, list):
        return None
    return {"jobIds": [job_id for job_id in ids if isinstance(job_id, str)]}


class Subscription:
    """One listen request: its agreed filter, and the notifications that match it."""

    def __init__(
        self, server: NotificationSource, subscription_id: RequestId, wanted: dict[str, Any]
    ) -> None:
        self.server = server
        self.id = subscription_id
        self.agreed = agreed_filter(server, wanted)
        self._methods = {LIST_FLAGS[flag][0] for flag in self.agreed if flag in LIST_FLAGS}
        self._uris = set(self.agreed.get("resourceSubscriptions", []))
        jobs = self.agreed.get(JOB_EVENTS_FILTER)
        self._jobs = bool(jobs)
        self._job_ids = set(jobs["jobIds"]) if isinstance(jobs, dict) else None

    def tagged(self, method: str, params: dict[str, Any]) -> Notification:
        return Notification(method, {**params, "_meta": {SUBSCRIPTION_KEY: self.id}})

    def acknowledgement(self) -> Notification:
        return self.tagged("notifications/subscriptions/acknowledged", {"notifications": self.agreed})

    def open(self, deliver: Callable[[Notification], None]) -> Callable[[], None]:
        """Start delivering matching notifications; returns the function that stops it."""

        def on_notification(notification: Notification, uri: str | None) -> None:
            if (uri is None and notification.method in self._methods) or (
                uri is not None and uri in self._uris
            ):
                deliver(self.tagged(notification.method, notification.params or {}))

        def on_job_event(job: JobRecord, event: JobEvent) -> None:
            if self._jobs and (self._job_ids is None or job.job_id in self._job_ids):
                deliver(self.tagged(event.method, event.to_params()))

        stops = [self.server.add_listener(on_notification), self.server.add_job_listener(on_job_event)]

        def stop() -> None:
            for each in stops:
                each()

        return stop
