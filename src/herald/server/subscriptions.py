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

Job events are never a firehose. `{"io.herald/jobEvents": true}` selects the jobs the
subscriber owns, so it is honoured only for a subscriber with an identity (an
authenticated principal); `{"jobIds": [...]}` selects the jobs named, and only those the
subscriber may see (`herald.server.principal.may_see`). A named job's events so far are
sent first, so a client may start a job, then listen, and miss nothing; an event may then
come twice, and clients key events by `eventId`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from herald.jobs.events import JobEvent
from herald.jobs.record import JobRecord
from herald.jobs.store import JobReader
from herald.protocol.messages import Notification, RequestId
from herald.protocol.versions import Era
from herald.runtime.jobs import Jobs
from herald.server.jobs import JOB_EVENTS_EXTENSION, JOB_EVENTS_FILTER
from herald.server.notifications import Notifications
from herald.server.outbox import Outbox
from herald.server.principal import Principal, may_see

SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
#: Job ids one subscription may name (each one's events so far are read when it opens).
MAX_NAMED_JOBS = 100
#: Hears a server-initiated notification, with the resource URI of a resource update.

#: Filter flag -> (the list-changed notification it selects, the capability that must offer it).
LIST_FLAGS = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources"),
}


class NotificationSource(Protocol):
    """What a subscription follows on the server: what it declares and what it announces."""

    def capabilities(self, era: Era = Era.HANDSHAKE) -> dict[str, Any]: ...

    notifications: Notifications
    jobs: Jobs


def agreed_filter(
    server: NotificationSource, wanted: dict[str, Any], owner: str | None = None
) -> dict[str, Any]:
    """The part of a requested filter the server offers.

    A key is honoured only when its value has the type the filter defines (`true` for a
    flag, a list for URIs or job ids); a malformed one is left out, never widened.
    """
    capabilities = server.capabilities(Era.MODERN)
    agreed: dict[str, Any] = {
        flag: True
        for flag, (_, capability) in LIST_FLAGS.items()
        if wanted.get(flag) is True and capabilities.get(capability, {}).get("listChanged")
    }
    jobs = job_filter(wanted.get(JOB_EVENTS_FILTER))
    if jobs is True and not owner:
        jobs = None  # "all my jobs" from a subscriber with no identity would be everyone's jobs
    if jobs is not None and JOB_EVENTS_EXTENSION in capabilities.get("extensions", {}):
        agreed[JOB_EVENTS_FILTER] = jobs
    uris = wanted.get("resourceSubscriptions")
    if isinstance(uris, list) and capabilities.get("resources", {}).get("subscribe"):
        agreed["resourceSubscriptions"] = [uri for uri in uris if isinstance(uri, str)]
    return agreed


def job_filter(wanted: Any) -> bool | dict[str, list[str]] | None:
    """What an `io.herald/jobEvents` value asks for: every job (`True`), some, or nothing (None).

    `true` and an object without `jobIds` mean every job of the subscriber's; `{"jobIds":
    [...]}` the jobs named (its non-string entries dropped, at most `MAX_NAMED_JOBS`). A
    `jobIds` that is not a list names no job the server can tell, so it is not honoured,
    rather than read as every job.
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
    return {"jobIds": [job_id for job_id in ids if isinstance(job_id, str)][:MAX_NAMED_JOBS]}


class Subscription:
    """One listen request: its agreed filter, and the notifications that match it."""

    def __init__(
        self,
        server: NotificationSource,
        subscription_id: RequestId,
        wanted: dict[str, Any],
        *,
        owner: str | None = None,
        principal: Principal | None = None,
    ) -> None:
        self.server = server
        self.id = subscription_id
        self.owner = owner
        self.principal = principal
        self.agreed = agreed_filter(server, wanted, owner)
        self._methods = {LIST_FLAGS[flag][0] for flag in self.agreed if flag in LIST_FLAGS}
        self._uris = set(self.agreed.get("resourceSubscriptions", []))
        jobs = self.agreed.get(JOB_EVENTS_FILTER)
        self._jobs = bool(jobs)
        self._job_ids = set(jobs["jobIds"]) if isinstance(jobs, dict) else None
        #: While `replay` sends what came before, the last live event heard of each named job:
        #: the events themselves are in the store, and `replay` reads them from there after,
        #: so a listen that reads slowly holds one number per job, not every event.
        self._heard_live: dict[str, int] | None = {} if self._job_ids else None
        #: The last event sent of each named job: a job's events go out once each, in order.
        self._sent: dict[str, int] = {}

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
            if not self.wants(job):
                return
            if self._heard_live is not None:  # the replay is still sending what came before
                self._heard_live[job.job_id] = event.sequence
            else:
                self._deliver_once(job.job_id, event, deliver)

        # Each part of the filter is heard where the server files it, so a listen costs the
        # events it follows: a job's come only to the listens that name it or own it.
        stops: list[Callable[[], None]] = []
        if self._methods or self._uris:
            stops.append(self.server.notifications.add_listener(on_notification))
        if self._job_ids is not None:
            stops += [self.server.jobs.add_listener(on_job_event, job_id=job_id) for job_id in self._job_ids]
        elif self._jobs:  # `true`: agreed only for a subscriber with an identity, its owner
            stops.append(self.server.jobs.add_listener(on_job_event, owner=self.owner))

        def stop() -> None:
            for each in stops:
                each()

        return stop

    def wants(self, job: JobRecord) -> bool:
        """Whether this subscription delivers the job's events: named and visible, or owned."""
        if not self._jobs:
            return False
        if self._job_ids is not None:
            return job.job_id in self._job_ids and may_see(job.owner, self.principal)
        return bool(self.owner) and job.owner == self.owner

    async def replay(self, store: JobReader, outbox: Outbox) -> None:
        """The events so far of the jobs the subscription names (those it may see), then those
        that came live meanwhile, read from the store too, so each job's events go out in
        order; from then on live events go out as they come.

        The events go at the pace the outbox takes them (`drain`), so a listen that names
        long jobs and reads slowly, or not at all, never has them all queued at once.
        """
        try:
            for job_id in sorted(self._job_ids or ()):
                job = await store.get(job_id)
                if job is not None and self.wants(job):
                    await self._send_stored(store, job_id, outbox)
            while behind := sorted(
                job_id
                for job_id, sequence in (self._heard_live or {}).items()
                if sequence > self._sent.get(job_id, 0)
            ):
                for job_id in behind:
                    await self._send_stored(store, job_id, outbox)
        finally:
            self._heard_live = None  # nothing is behind (or the listen has ended): live from here

    async def _send_stored(self, store: JobReader, job_id: str, outbox: Outbox) -> None:
        for event in await store.events_after(job_id, self._sent.get(job_id, 0)):
            self._deliver_once(job_id, event, outbox.send)
            await outbox.drain()

    def _deliver_once(self, job_id: str, event: JobEvent, deliver: Callable[[Notification], None]) -> None:
        """Deliver a named job's event unless one at or after it went out (a replayed one, say)."""
        if self._job_ids is not None:
            if event.sequence <= self._sent.get(job_id, 0):
                return
            self._sent[job_id] = event.sequence
        deliver(self.tagged(event.method, event.to_params()))
