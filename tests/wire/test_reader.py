"""Reading a log from a stream: every line as it was, at its place, and a line over the limit
as its size alone, wherever the reads cut it."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from herald.wire.reader import LongLine, line_batches

LINES = st.lists(st.binary(max_size=30).map(lambda line: line.replace(b"\n", b"")), max_size=10)


def read(data: bytes, limit: int) -> list[bytes | LongLine]:
    return [
        line
        for batch in line_batches(io.BytesIO(data), limit)
        for line in ([batch] if isinstance(batch, LongLine) else batch)
    ]


@given(LINES, st.integers(1, 40), st.booleans())
def test_lines_come_whole_or_as_their_size(lines: list[bytes], limit: int, last_ends: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if last_ends and lines else b"")
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()  # after the last newline there is no line
    assert read(data, limit) == [LongLine(len(line)) if len(line) > limit else line for line in expected]


def test_a_line_longer_than_many_reads_is_counted_not_kept() -> None:
    data = b"first\n" + b"x" * 1000 + b"\nlast"
    assert read(data, 10) == [b"first", LongLine(1000), b"last"]
    assert read(b"y" * 50, 10) == [LongLine(50)], "an over-long last line with no newline"
