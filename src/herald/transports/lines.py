"""Newline framing for stdio: split a byte stream into frames, refusing oversize ones.

A frame longer than the limit is skipped to its newline without being buffered, and
reported once, so one huge line cannot exhaust memory or stall the stream. Of the
skipped line only its first `HEAD_BYTES` and last `TAIL_BYTES` are kept: enough for
`herald.protocol.codec.too_large` to read the request's id, so the refusal can be
paired with the request it refuses.

The splitter can stop between two lines (`pause`, from `on_line` say) and go on later
(`resume`): what it was fed meanwhile waits, unsplit. A chunk read from a pipe holds
thousands of short requests, so stopping the reads alone would not stop them.
"""

from __future__ import annotations

from collections.abc import Callable

from herald.protocol.peek import HEAD_BYTES, TAIL_BYTES

#: Called with an oversize line's size in bytes (newline excluded), its head and its tail.
OnOversize = Callable[[int, bytes, bytes], None]


class LineSplitter:
    """Feed chunks; complete lines go to `on_line`, oversize ones to `on_oversize`.

    `on_finished` is called once `finish` has taken effect: after every line fed before it.
    """

    def __init__(
        self,
        limit: int,
        on_line: Callable[[bytes], None],
        on_oversize: OnOversize,
        on_finished: Callable[[], None] | None = None,
    ):
        self._limit = limit
        self._on_line = on_line
        self._on_oversize = on_oversize
        self._on_finished = on_finished
        self._buffer = bytearray()
        self._skipped: int | None = None  # bytes of the oversize line dropped so far
        self._head = b""
        self._tail = b""
        self._paused = False
        self._unsplit = b""  # fed while paused, or left when `pause` came mid-chunk
        self._finishing = False

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        """Split no further line until `resume`."""
        self._paused = True

    def resume(self) -> None:
        """Go on splitting what was fed while paused (never call it from `on_line`)."""
        self._paused = False
        while self._unsplit and not self._paused:
            rest, self._unsplit = self._unsplit, b""
            self._split(rest)
        if self._finishing and not self._paused:
            self._end()

    def feed(self, chunk: bytes) -> None:
        if self._paused:
            self._unsplit += chunk
        else:
            self._split(chunk)

    def _split(self, chunk: bytes) -> None:
        start = 0
        while not self._paused:
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
        self._unsplit = chunk[start:]

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
        """End of input: a last line without a newline still counts (once the splitter is not paused)."""
        self._finishing = True
        if not self._paused:
            self._end()

    def _end(self) -> None:
        self._finishing = False
        if self._skipped is not None:
            self._report()
        elif self._buffer.strip():
            self._on_line(bytes(self._buffer))
        self._buffer.clear()
        if self._on_finished is not None:
            self._on_finished()
