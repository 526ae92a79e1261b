"""The SSE codec: what we encode decodes back, and any bytes decode or raise our error."""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.errors import ParseError
from herald.protocol.sse import SSEDecoder, SSEEvent, encode_comment, encode_event


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
