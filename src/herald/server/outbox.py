"""Where a connection's outgoing messages go; each transport provides one.

`send` is synchronous so answering a request never waits on the event loop;
`drain` lets a producer of many messages (progress, logs) respect back-pressure.
"""

from __future__ import annotations

from typing import Protocol

from herald.protocol.codec import Outgoing


class Outbox(Protocol):
    def send(self, message: Outgoing) -> None:
        """Queue one message (or a batch reply) for the peer, in order."""

    async def drain(self) -> None:
        """Wait until the queue is small enough to add more."""
