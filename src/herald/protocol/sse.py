"""Server-Sent Events framing, with no I/O.

The encoder writes what the Streamable HTTP transport sends: events with an `id`
(so a client can resume with `Last-Event-ID`), an optional `retry`, JSON data on one
line, and comment lines as keep-alives.

Decoding has two levels. `RawEventDecoder` cuts a stream into events as bytes, as the
WHATWG event-stream rules say but before any UTF-8 decoding, so a recorder can keep what
was sent even where it is not UTF-8, and with a limit it never holds more than that of
one event: a longer one is passed over to its end and handed on as its start and size
(`OversizeEvent`). `SSEDecoder`, the client side used by our client and tests, decodes
those events to text; like the JSON-RPC decoder it raises nothing but our errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from herald.protocol.errors import ParseError
from herald.protocol.peek import HEAD_BYTES

#: A line ends with CRLF, LF or CR.
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. `data` is empty for a priming event."""

    data: str
    id: str | None = None
    event: str = "message"
    retry: int | None = None


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One dispatched event as the bytes of its fields (`data` lines joined with a newline)."""

    data: bytes
    id: bytes | None = None
    event: bytes = b""
    retry: int | None = None


@dataclass(frozen=True, slots=True)
class OversizeEvent:
    """An event longer than the decoder's limit: its `size` in bytes (its lines, without their
    ends), the start of its data, and its id if that came before the limit was reached."""

    size: int
    head: bytes
    id: bytes | None = None


def encode_event(data: bytes, *, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One `message` event. JSON never contains a raw newline, so data is one line."""
    parts: list[bytes] = []
    if event_id is not None:
        parts.append(b"id: " + event_id.encode() + b"\n")
    if retry_ms is not None:
        parts.append(b"retry: %d\n" % retry_ms)
    # Joined once: `b"data: " + data + b"\n\n"` made two copies of data before the join
    # made a third, and a job's result document can be tens of megabytes.
    parts += (b"data: ", data, b"\n\n")
    return b"".join(parts)


def encode_comment(text: str = "") -> bytes:
    """A comment line: ignored by clients, it keeps idle connections and proxies open."""
    return b": " + text.encode() + b"\n\n"


class RawEventDecoder:
    """Feed bytes, get the events they complete, as bytes.

    With a `limit`, no more than that of one event is held: once an event's lines come
    to more, what it has gathered is dropped but for its first `HEAD_BYTES` of data, the
    rest of it is counted as it passes, and at its end it is handed on as an
    `OversizeEvent`. An event that never ends then costs nothing more than its start.
    """

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit
        self._line = bytearray()  # the start of a line whose end has not come yet
        self._line_size = 0
        self._after_cr = False  # the last chunk ended with CR: an LF first in the next ends nothing
        self._data: list[bytes] = []
        self._event = b""
        self._id: bytes | None = None
        self._retry: int | None = None
        self._size = 0  # bytes of the current event's ended lines
        self._head: bytes | None = None  # set once the current event is over the limit

    def feed(self, chunk: bytes) -> list[RawEvent | OversizeEvent]:
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF cut between two chunks
        self._after_cr = chunk.endswith(b"\r")
        lines = _LINE_END.split(chunk) if b"\r" in chunk else chunk.split(b"\n")
        rest = lines.pop()  # after the last line end: the start of a line still to come
        events: list[RawEvent | OversizeEvent] = []
        if lines and self._line_size:  # the end of a line begun in an earlier chunk
            self._add(lines.pop(0))
            line, size = bytes(self._line), self._line_size
            self._line.clear()
            self._line_size = 0
            self._end_line(line, size, events)
        for line in lines:
            self._end_line(line, len(line), events)
        if rest:
            self._add(rest)
        return events

    def _add(self, piece: bytes) -> None:
        """More of a line whose end has not come: kept while the event stays within the limit."""
        self._line_size += len(piece)
        if self._head is not None:
            return
        if self._limit is not None and self._size + self._line_size > self._limit:
            self._pass_over((bytes(self._line[:HEAD_BYTES]) + piece[:HEAD_BYTES])[:HEAD_BYTES])
        else:
            self._line += piece

    def _end_line(self, line: bytes, size: int, events: list[RawEvent | OversizeEvent]) -> None:
        if not size:
            self._dispatch(events)
            return
        self._size += size
        if self._head is not None:
            return  # the rest of an event over the limit: only counted
        if self._limit is not None and self._size > self._limit:
            self._pass_over(line[:HEAD_BYTES])
            return
        if line.startswith(b":"):
            return
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._event = value
        elif field == b"id" and b"\0" not in value:
            self._id = value
        elif field == b"retry" and value.isdigit():
            self._retry = int(value)

    def _pass_over(self, line_start: bytes) -> None:
        """The event is over the limit: keep the start of its data (this line's too, if it is
        data) and drop the rest of what it holds."""
        field, _, value = line_start.partition(b":")
        pieces = [*self._data, value.removeprefix(b" ")] if field == b"data" else self._data
        head = bytearray()
        for piece in pieces:
            if len(head) >= HEAD_BYTES:
                break
            head += (b"\n" if head else b"") + piece[:HEAD_BYTES]
        self._head = bytes(head[:HEAD_BYTES])
        self._data = []
        self._line.clear()

    def _dispatch(self, events: list[RawEvent | OversizeEvent]) -> None:
        if self._head is not None:
            events.append(OversizeEvent(self._size, self._head, self._id))
        elif any(self._data) or self._id is not None:  # else nothing to hand over (WHATWG: empty data)
            events.append(RawEvent(b"\n".join(self._data), self._id, self._event, self._retry))
        self._data, self._event, self._id, self._retry = [], b"", None, None
        self._size, self._head = 0, None


class SSEDecoder:
    """Feed bytes, get the events they complete as text (per the WHATWG event-stream rules).

    An event that is not UTF-8, or (with a `limit`) longer than `limit` bytes, is a `ParseError`.
    """

    def __init__(self, limit: int | None = None) -> None:
        self._raw = RawEventDecoder(limit)
        self._limit = limit
        self.last_event_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for raw in self._raw.feed(chunk):
            if isinstance(raw, OversizeEvent):
                raise ParseError(f"an event of {raw.size} bytes, over the limit of {self._limit}")
            try:
                event_id = raw.id.decode() if raw.id is not None else None
                event = SSEEvent(raw.data.decode(), event_id, raw.event.decode() or "message", raw.retry)
            except UnicodeDecodeError:
                raise ParseError("event stream is not valid UTF-8") from None
            if event_id is not None:
                self.last_event_id = event_id
            events.append(event)
        return events
