"""The SSE codec: what we encode decodes back, and any bytes decode or raise our error."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.errors import ParseError
from herald.protocol.sse import (
    OversizeEvent,
    RawEvent,
    RawEventDecoder,
    SSEDecoder,
    SSEEvent,
    encode_comment,
    encode_event,
)


def test_event_with_id_and_retry() -> None:
    frame = encode_event(b'{"a":1}', event_id="s1-4", retry_ms=1000)
    assert frame == b'id: s1-4\nretry: 1000\ndata: {"a":1}\n\n'
    assert SSEDecoder().feed(frame) == [SSEEvent('{"a":1}', "s1-4", "message", 1000)]


def test_priming_event_has_an_id_and_empty_data() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(encode_event(b"", event_id="s1-0", retry_ms=500)) == [
        SSEEvent("", "s1-0", "message", 500)
    ]
    assert decoder.last_event_id == "s1-0"


def test_comments_are_ignored_and_chunks_can_split_anywhere() -> None:
    stream = encode_comment("keep-alive") + encode_event(b"x", event_id="1") + encode_event(b"y")
    decoder = SSEDecoder()
    events = [event for byte in stream for event in decoder.feed(bytes([byte]))]
    assert events == [SSEEvent("x", "1"), SSEEvent("y")]


def test_line_endings() -> None:
    assert SSEDecoder().feed(b"data: a\r\ndata: b\r\rdata: c\n\n") == [SSEEvent("a\nb"), SSEEvent("c")]


@given(st.lists(st.binary(max_size=40), max_size=8))
def test_any_bytes_decode_or_raise_our_error(chunks: list[bytes]) -> None:
    decoder = SSEDecoder()
    with contextlib.suppress(ParseError):
        for chunk in chunks:
            for event in decoder.feed(chunk):
                assert isinstance(event, SSEEvent)


@given(
    st.lists(
        st.tuples(
            st.text(
                alphabet=st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=30
            ),
            st.none() | st.from_regex(r"[A-Za-z0-9:_-]{1,12}", fullmatch=True),
        ),
        max_size=6,
    )
)
def test_encode_round_trips(events: list[tuple[str, str | None]]) -> None:
    stream = b"".join(encode_event(data.encode(), event_id=event_id) for data, event_id in events)
    decoded = SSEDecoder().feed(stream)
    expected = [SSEEvent(data, event_id) for data, event_id in events if data or event_id is not None]
    assert decoded == expected


def test_raw_events_keep_bytes_that_are_not_utf8_and_read_on() -> None:
    stream = b"id: 1\ndata: \xff\n\nid: 2\ndata: ok\n\n"
    assert RawEventDecoder().feed(stream) == [RawEvent(b"\xff", b"1"), RawEvent(b"ok", b"2")]
    with pytest.raises(ParseError):
        SSEDecoder().feed(stream)


def test_an_event_over_the_limit_is_passed_over_to_its_end() -> None:
    stream = b"id: 7\ndata: " + b"x" * 1000 + b"\ndata: more\n\ndata: after\n\n"
    decoder = RawEventDecoder(limit=100)
    events = [
        event for start in range(0, len(stream), 33) for event in decoder.feed(stream[start : start + 33])
    ]
    assert len(events) == 2
    over, after = events
    assert isinstance(over, OversizeEvent)
    assert (over.size, over.id) == (len(b"id: 7") + len(b"data: ") + 1000 + len(b"data: more"), b"7")
    assert over.head
    assert over.head == b"x" * len(over.head), "the start of its data is kept"
    assert after == RawEvent(b"after")
    with pytest.raises(ParseError, match="over the limit of 100"):
        SSEDecoder(limit=100).feed(stream)


@given(
    st.lists(
        st.binary(max_size=60).map(lambda data: data.replace(b"\r", b"").replace(b"\n", b"")), max_size=6
    ),
    st.integers(1, 80),
    st.integers(1, 50),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_events_over_the_limit_whatever_the_chunks(
    datas: list[bytes], limit: int, step: int, end: bytes
) -> None:
    stream = b"".join(b"data: " + data + end + end for data in datas)
    decoder = RawEventDecoder(limit)
    events = [
        event for start in range(0, len(stream), step) for event in decoder.feed(stream[start : start + step])
    ]
    said = [
        ("over", event.size) if isinstance(event, OversizeEvent) else ("event", event.data)
        for event in events
    ]
    expected = [
        ("over", 6 + len(data)) if 6 + len(data) > limit else ("event", data)
        for data in datas
        if data or limit < 6
    ]
    assert said == expected
    kept = [data for data in datas if 6 + len(data) > limit]
    heads = [event.head for event in events if isinstance(event, OversizeEvent)]
    assert all(data.startswith(head) for data, head in zip(kept, heads, strict=True))
