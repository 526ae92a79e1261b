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


@given(
    st.lists(st.integers(1, 2 * LIMIT), min_size=1, max_size=12),
    st.lists(st.integers(0, 4 * LIMIT), max_size=6),
    st.sets(st.integers(0, 11)),
)
def test_pausing_between_lines_loses_nothing_and_keeps_the_order(
    lengths: list[int], cuts: list[int], pause_after: set[int]
) -> None:
    """`pause` from `on_line` stops the splitting there; what is fed meanwhile waits for `resume`,
    and the end of input takes effect only after every line before it."""
    sent = [bytes([65 + index % 26]) * length for index, length in enumerate(lengths)]
    stream = b"\n".join(sent)  # the last line has no newline: `finish` gives it
    taken: list[bytes] = []
    refused: list[int] = []
    finished: list[int] = []

    def on_line(line: bytes) -> None:
        taken.append(line)
        if len(taken) - 1 in pause_after:
            splitter.pause()

    def on_oversize(size: int, head: bytes, tail: bytes) -> None:
        refused.append(size)

    splitter = LineSplitter(LIMIT, on_line, on_oversize, lambda: finished.append(len(taken)))
    start = 0
    for cut in sorted(cuts):
        splitter.feed(stream[start:cut])
        start = max(start, cut)
        if splitter.paused:
            splitter.resume()
    splitter.feed(stream[start:])
    splitter.finish()
    while splitter.paused:
        splitter.resume()
    assert taken == [line for line in sent if len(line) <= LIMIT]
    assert refused == [len(line) for line in sent if len(line) > LIMIT]
    assert finished == [len(taken)], "the end comes once, after every line fed before it"
