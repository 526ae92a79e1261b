"""Newline framing: lines under the limit pass whole, oversize ones are reported by their edges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.peek import HEAD_BYTES, TAIL_BYTES
from herald.transports.lines import LineSplitter

LIMIT = 100


def split(stream: bytes, cuts: list[int]) -> tuple[list[bytes], list[tuple[int, bytes, bytes]]]:
    lines: list[bytes] = []
    oversize: list[tuple[int, bytes, bytes]] = []
    splitter = LineSplitter(LIMIT, lines.append, lambda *report: oversize.append(report))
    start = 0
    for cut in sorted(cuts):
        splitter.feed(stream[start:cut])
        start = max(start, cut)
    splitter.feed(stream[start:])
    splitter.finish()
    return lines, oversize


line_lengths = st.lists(
    st.sampled_from([1, LIMIT, LIMIT + 1, HEAD_BYTES - 1, HEAD_BYTES + TAIL_BYTES + 7]), max_size=5
)


@given(line_lengths, st.lists(st.integers(0, 3 * HEAD_BYTES), max_size=8), st.booleans())
def test_any_chunking_gives_the_same_lines_and_edges(
    lengths: list[int], cuts: list[int], final_newline: bool
) -> None:
    # Every line is distinct byte by byte, so a head or tail from the wrong place shows.
    sent = [
        bytes((index * 7 + offset) % 251 + 1 for offset in range(length))
        for index, length in enumerate(lengths)
    ]
    sent = [line.replace(b"\n", b"!") for line in sent]
    stream = b"\n".join(sent) + (b"\n" if final_newline else b"")
    lines, oversize = split(stream, cuts)
    assert lines == [line for line in sent if len(line) <= LIMIT and line.strip()]
    assert oversize == [
        (len(line), line[:HEAD_BYTES], line[-TAIL_BYTES:]) for line in sent if len(line) > LIMIT
    ]
