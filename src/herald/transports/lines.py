"""Newline framing for stdio: split a byte stream into frames, refusing oversize ones.

A frame longer than the limit is skipped to its newline without being buffered, and
reported once, so one huge line cannot exhaust memory or stall the stream. Of the
skipped line only its first `HEAD_BYTES` and last `TAIL_BYTES` are kept: enough for
`herald.protocol.codec.too_large` to read the request's id, so the refusal can be
paired with the request it refuses.
"""

from __future__ import annotations

from collections.abc import Callable

from herald.protocol.peek import HEAD_BYTES, TAIL_BYTES

#: Called with an oversize line's size in bytes (newline excluded), its head and its tail.
OnOversize = Callable[[int, bytes, bytes], None]


class LineSplitter:
    """Feed chunks; complete lines go to `on_line`, oversize ones to `on_oversize`."""

    def __init__(self, limit: int, on_line: Callable[[bytes], None], on_oversize: OnOversize):
        self._limit = limit
        self._on_line = on_line
        self._on_oversize = on_oversize
        self._buffer = bytearray()
        self._skipped: int | None = None  # bytes of the oversize line dropped so far
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._keep(chunk[start:])
                return
            piece = chunk[start:end]
            start = end + 1
            if self._skipped is not None:
                self._skip(piece)
                self._report()
            elif len(self._buffer) + len(piece) > self._limit:
                self._start_skipping(piece)
                self._report()
            else:
                line = bytes(self._buffer + piece) if self._buffer else piece
                self._buffer.clear()
                if line.strip():
                    self._on_line(line)

    def _keep(self, rest: bytes) -> None:
        if self._skipped is not None:
            self._skip(rest)
        elif len(self._buffer) + len(rest) > self._limit:
            self._start_skipping(rest)
        else:
            self._buffer += rest

    def _start_skipping(self, rest: bytes) -> None:
        """The line in the buffer, with `rest`, is over the limit: keep its edges, drop the body."""
        self._skipped = len(self._buffer) + len(rest)
        self._head = bytes(self._buffer[:HEAD_BYTES]) + rest[: max(0, HEAD_BYTES - len(self._buffer))]
        self._tail = (bytes(self._buffer[-TAIL_BYTES:]) + rest[-TAIL_BYTES:])[-TAIL_BYTES:]
        self._buffer.clear()

    def _skip(self, rest: bytes) -> None:
        assert self._skipped is not None
        self._skipped += len(rest)
        if len(self._head) < HEAD_BYTES:
            self._head += rest[: HEAD_BYTES - len(self._head)]
        self._tail = (self._tail + rest[-TAIL_BYTES:])[-TAIL_BYTES:]

    def _report(self) -> None:
        assert self._skipped is not None
        size, head, tail = self._skipped, self._head, self._tail
        self._skipped, self._head, self._tail = None, b"", b""
        self._on_oversize(size, head, tail)

    def finish(self) -> None:
        """End of input: a last line without a newline still counts."""
        if self._skipped is not None:
            self._report()
        elif self._buffer.strip():
            self._on_line(bytes(self._buffer))
        self._buffer.clear()
