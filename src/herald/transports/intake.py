"""Back-pressure for stdio: take in the client's requests only while their answers flow.

A client that writes requests faster than it reads the answers (or stops reading for a
while) would otherwise have the server read every request, run it, and hold every
answer in memory until the client reads it: 4,000 reads of a 40 KB resource held
160 MB. So the server stops taking requests in while

- more than `HIGH_WATER` bytes of answers wait to be written to stdout, or
- more than `MAX_UNANSWERED` requests have been taken in and not yet answered,

and starts again once the client has read (the pipe to it drained) and no more than
half that many wait. Stopping means both: the splitter stops between two lines (a chunk
read from the pipe holds thousands of requests), and stdin is not read, so the client's
writes wait in the pipe as they would on a slow server. Every request is still answered,
once, in the order the connection answers it.

A request that ends only by the client's doing does not count: an endless subscription,
or a request while the server waits for the client's answer to one of its own
(elicitation, sampling): that answer comes on stdin, so stdin must be read.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from herald.server.connection import Connection
from herald.transports.lines import LineSplitter
from herald.transports.pipes import Reader

#: Bytes waiting to be written past which the server stops taking requests in, and
#: producers (progress, logs) wait (`StdoutOutbox.drain`).
HIGH_WATER = 256 * 1024
#: Requests taken in and not answered past which the server stops taking more in.
MAX_UNANSWERED = 128


class Written(Protocol):
    """What the intake needs of the outbox: how much is unwritten, and a wait until it is written."""

    #: Set whenever a message goes out or a request ends without one (the intake clears it).
    changed: asyncio.Event

    @property
    def unwritten(self) -> int: ...

    async def drained(self) -> None: ...


class Intake:
    """Takes lines in from `reader` through `splitter` while `connection`'s answers flow.

    Call `took` after each line was handed to the connection; `close` before the
    connection closes.
    """

    def __init__(self, connection: Connection, outbox: Written, splitter: LineSplitter) -> None:
        self.connection = connection
        self.outbox = outbox
        self.splitter = splitter
        self.reader: Reader | None = None
        self._waiting: asyncio.Task[None] | None = None

    def took(self) -> None:
        """A line was taken in: stop taking more if too much waits for the client."""
        if self._waiting is not None:
            return
        if self._unanswered() > MAX_UNANSWERED or self.outbox.unwritten > HIGH_WATER:
            self.splitter.pause()
            if self.reader is not None:
                self.reader.pause()
            self._waiting = self.connection.spawn(self._wait_for_the_client())

    def _unanswered(self) -> int:
        """Requests whose answers the server owes and can give without the client's help."""
        in_flight = self.connection.in_flight
        if in_flight <= MAX_UNANSWERED // 2:  # the usual case, kept cheap
            return in_flight
        protocol = self.connection.protocol
        if protocol.awaiting_client:
            return 0
        return in_flight - len(protocol.endless)

    async def _wait_for_the_client(self) -> None:
        """Wait until the client has read, and half the requests are answered; then take more in."""
        while True:
            await self.outbox.drained()
            if self.outbox.unwritten <= HIGH_WATER and self._unanswered() <= MAX_UNANSWERED // 2:
                break
            self.outbox.changed.clear()
            if self._unanswered() > MAX_UNANSWERED // 2:
                await self.outbox.changed.wait()
        self._waiting = None
        if self.reader is not None:
            self.reader.resume()
        self.splitter.resume()

    def close(self) -> None:
        """Stop waiting for the client (it went, or the server is stopping)."""
        if self._waiting is not None:
            self._waiting.cancel()
