"""Server-Sent Events framing, with no I/O.

The encoder writes what the Streamable HTTP transport sends: events with an `id`
(so a client can resume with `Last-Event-ID`), an optional `retry`, JSON data on one
line, and comment lines as keep-alives. The decoder is the client side, used by our
client and tests; like the JSON-RPC decoder it raises nothing but our errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from herald.protocol.errors import ParseError


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. `data` is empty for a priming event."""

    data: str
    id: str | None = None
    event: str = "message"
    retry: int | None = None


def encode_event(data: bytes, *, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One `message` event. JSON never contains a raw newline, so data is one line."""
    parts: list[bytes] = []
    if event_id is not None:
        parts.append(b"id: " + event_id.encode() + b"\n")
    if retry_ms is not None:
        parts.append(b"retry: %d\n" % retry_ms)
    parts.append(b"data: " + data + b"\n\n")
    return b"".join(parts)


def encode_comment(text: str = "") -> bytes:
    """A comment line: ignored by clients, it keeps idle connections and proxies open."""
    return b": " + text.encode() + b"\n\n"


class SSEDecoder:
    """Feed bytes, get the events they complete (per the WHATWG event-stream rules)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self.last_event_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer += chunk
        events: list[SSEEvent] = []
        while True:
            line, separator, rest = _split_line(self._buffer)
            if not separator:
                return events
            self._buffer = rest
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise ParseError("event stream is not valid UTF-8") from None
            event = self._line(text)
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if self._id is not None:
            self.last_event_id = self._id
        if not any(self._data) and self._id is None:  # nothing to hand over (WHATWG: empty data)
            self._data, self._event, self._retry = [], "", None
            return None
        event = SSEEvent("\n".join(self._data), self._id, self._event or "message", self._retry)
        self._data, self._event, self._id, self._retry = [], "", None, None
        return event


def _split_line(buffer: bytes) -> tuple[bytes, bool, bytes]:
    """Split off one line ended by CRLF, LF or CR; a trailing CR waits for the next byte."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if cr < 0 or (0 <= lf < cr):
        return (buffer[:lf], True, buffer[lf + 1 :]) if lf >= 0 else (b"", False, buffer)
    if cr + 1 == len(buffer):
        return b"", False, buffer
    skip = 2 if buffer[cr + 1 : cr + 2] == b"\n" else 1
    return buffer[:cr], True, buffer[cr + skip :]
