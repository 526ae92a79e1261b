"""uvicorn's HTTP protocol with the limits a server on a network needs: deadlines, and a cap.

uvicorn times out only an idle keep-alive connection, and only after a response: a
socket that sends nothing, half a request head, or its headers without the body holds a
file descriptor for ever, and a thousand of them leave no descriptor for a real client.
`guarded_protocol` makes a protocol class (uvicorn builds one per connection) that:

- closes a connection whose request head is not complete `header_timeout` seconds after
  it connected, or after the head's first bytes on a kept-alive connection, answering 408;
- closes one whose body does not arrive within `body_timeout` of its head (408 when no
  answer has begun), the clock paused while uvicorn itself stops reading;
- answers a connection beyond `max_connections` with 503 and `Retry-After` at once, and
  closes it, so the cap is a clear refusal rather than a reset;
- drops a connection whose client takes none of what it is sent for `write_timeout`
  seconds while more waits (uvicorn has paused writing): the transport's buffer and the
  response waiting to write are freed, which closing would not do, since a close waits
  for the buffer to be read;
- keeps the authority of an absolute-form request target (`POST http://name/mcp`) in the
  scope under `TARGET_AUTHORITY`, which uvicorn drops, so the Host check can see it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from herald.transports.http.asgi import RETRY_AFTER_SECONDS, TARGET_AUTHORITY


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_connections: int
    write_timeout: float


def guarded_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """A protocol class for `uvicorn.Config(http=...)` that enforces `limits`."""

    class Guarded(_GuardedProtocol):
        pass

    Guarded.limits = limits
    return Guarded


class _GuardedProtocol(HttpToolsProtocol):
    limits: ConnectionLimits

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        self._unwritten = 0  # the transport's buffered bytes when the write deadline was armed
        self._in_head = False
        self._reading_body = False
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refuse(
                503,
                b"Service Unavailable",
                f"the server serves {self.limits.max_connections} connections at once; try again shortly",
            )
            return
        self._arm(self.limits.header_timeout, self._head_too_slow)  # nothing has come yet

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # A deadline is set only for a request still incomplete after a read. Most requests
        # arrive whole in one read and cost no timer; a slow one's clock starts at its first
        # read and is not reset by the next ones.
        if self._deadline is None and not self.transport.is_closing():
            if self._in_head:
                self._arm(self.limits.header_timeout, self._head_too_slow)
            elif self._reading_body:
                self._arm(self.limits.body_timeout, self._body_too_slow)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm()
        url: bytes = self.url
        if url[:7].lower() == b"http://" or url[:8].lower() == b"https://":
            authority = url.split(b"://", 1)[1].split(b"/", 1)[0].split(b"?", 1)[0]
            self.scope[TARGET_AUTHORITY] = authority.decode("latin-1")  # type: ignore[typeddict-unknown-key]
        super().on_headers_complete()
        self._reading_body = True

    def on_message_complete(self) -> None:
        self._reading_body = False
        self._disarm()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_watching_writes()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        self._watch_writes()

    def resume_writing(self) -> None:
        self._stop_watching_writes()
        super().resume_writing()

    # -- deadlines -----------------------------------------------------------------------------

    def _arm(self, seconds: float, handler: Any) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, handler)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _watch_writes(self) -> None:
        self._stop_watching_writes()
        self._unwritten = self.transport.get_write_buffer_size()
        self._write_deadline = self.loop.call_later(self.limits.write_timeout, self._writes_stalled)

    def _stop_watching_writes(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _writes_stalled(self) -> None:
        self._write_deadline = None
        if self.transport.get_write_buffer_size() < self._unwritten:  # it reads, slowly: wait on
            self._watch_writes()
            return
        self.transport.abort()  # uvicorn then tells the app the client has gone

    def _head_too_slow(self) -> None:
        self._deadline = None
        self._refuse(408, b"Request Timeout", f"the request head took over {self.limits.header_timeout:g} s")

    def _body_too_slow(self) -> None:
        self._deadline = None
        if not self._reading_body:
            return
        if self.flow.read_paused:  # we stopped reading, not the client: wait for us
            self._arm(self.limits.body_timeout, self._body_too_slow)
            return
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()
            return
        self._refuse(408, b"Request Timeout", f"the request body took over {self.limits.body_timeout:g} s")

    def _refuse(self, status: int, reason: bytes, why: str) -> None:
        """Answer `status` in plain text, then close: a refusal a person and a client can read."""
        if self.transport.is_closing():
            return
        body = f"{why}\n".encode()
        head = [b"HTTP/1.1 %d %s\r\n" % (status, reason)]
        head += [b"%s: %s\r\n" % (name, value) for name, value in self.server_state.default_headers]
        head += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(body),
            b"retry-after: %d\r\n" % RETRY_AFTER_SECONDS if status == 503 else b"",
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
