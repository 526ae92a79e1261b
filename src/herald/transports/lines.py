"""Newline framing for stdio: split a byte stream into frames, refusing oversize ones.

A frame longer than the limit is skipped to its newline without being buffered, and
reported once, so one huge line cannot exhaust memory or stall the stream.
"""

from __future__ import annotations

from collections.abc import Callable


class LineSplitter:
    """Feed chunks; complete lines go to `on_line`, oversize ones to `on_oversize`."""

    def __init__(self, limit: int, on_line: Callable[[bytes], None], on_oversize: Callable[[int], None]):
        self._limit = limit
        self._on_line = on_line
        self._on_oversize = on_oversize
        self._buffer = bytearray()
        self._skipped: int | None = None  # bytes of the oversize line dropped so far

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
                self._on_oversize(self._skipped + len(piece))
                self._skipped = None
            elif len(self._buffer) + len(piece) > self._limit:
                self._on_oversize(len(self._buffer) + len(piece))
                self._buffer.clear()
            else:
                line = bytes(self._buffer + piece) if self._buffer else piece
                self._buffer.clear()
                if line.strip():
                    self._on_line(line)

    def _keep(self, rest: bytes) -> None:
        if self._skipped is not None:
            self._skipped += len(rest)
        elif len(self._buffer) + len(rest) > self._limit:
            self._skipped = len(self._buffer) + len(rest)
            self._buffer.clear()
        else:
            self._buffer += rest

    def finish(self) -> None:
        """End of input: a last line without a newline still counts."""
        if self._skipped is not None:
            self._on_oversize(self._skipped)
        elif self._buffer.strip():
            self._on_line(bytes(self._buffer))
        self._buffer.clear()
        self._skipped = None
