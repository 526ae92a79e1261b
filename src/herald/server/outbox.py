"""Where a connection's outgoing messages go; each transport provides one.

`send` is synchronous so answering a request never waits on the event loop;
`drain` lets a producer of many messages (progress, logs) respect back-pressure.

`Outbox` declares everything `Connection` calls on one. An outbox subclasses it and
overrides what its transport does differently: the rest has defaults that are right
for a plain byte stream (stdio, an in-memory pipe).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from herald.jobs.events import JobEvent
from herald.protocol.codec import Outgoing
from herald.protocol.messages import RequestId
from herald.server.job_notifications import job_notifications


class Outbox(Protocol):
    def send(self, message: Outgoing) -> None:
        """Queue one message (or a batch reply) for the peer, in order."""
        raise NotImplementedError

    async def drain(self) -> None:
        """Wait until the queue is small enough to add more."""
        return

    def send_job_event(self, event: JobEvent, progress_token: str | int | None) -> None:
        """Send a job event as its notifications (the event, and its progress mirror).

        An HTTP session's stream logs a reference to the event instead of its bytes, and
        renders it as it sends it.
        """
        for notification in job_notifications(event, progress_token):
            self.send(notification)

    def request_ended(self, request_id: RequestId) -> None:
        """A request ended without a reply (cancelled): JSON-RPC sends nothing, but an
        outbox that is one exchange (an HTTP POST) must learn that it is over."""
        return

    def stream_closer(self) -> Callable[[], None] | None:
        """What ends the stream a tool's `ctx.close_stream()` ends (SEP-1699); None where a
        transport has no such stream (stdio)."""
        return None
