"""Reading the id of an oversize message from its edges: right when it answers, never wrong."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.codec import decode, error_id, too_large
from herald.protocol.errors import MessageTooLarge
from herald.protocol.peek import HEAD_BYTES, TAIL_BYTES, peek_request_id

PADDING = "x" * (HEAD_BYTES + TAIL_BYTES)  # a params value that pushes the rest out of both edges


def edges(document: bytes) -> tuple[bytes, bytes]:
    return document[:HEAD_BYTES], document[-TAIL_BYTES:]


def peek(document: bytes) -> object:
    return peek_request_id(*edges(document))


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}', 7),
        (b'{"method":"tools/call","params":{},"jsonrpc":"2.0","id":"req-1"}', "req-1"),
        (b' {\n "id" : -3 ,\r\n "method" : "x" } \n', -3),
        (b'{"id":"a\\"b\\\\","method":"x"}', 'a"b\\'),
        (b'{"id":"\\u00e9t\\u00e9","method":"x"}', "été"),
        (b'{"method":"x","id":"a\\"b\\\\"}', 'a"b\\'),
        (b'{"method":"x","id":"\\\\"}', "\\"),
        # A repeated key: the last one wins, as when orjson parses it.
        (b'{"id":1,"method":"x","id":2}', 2),
        (b'{"id":1,"method":"x","id":2,"params":{}}', 2),
        (b'{"id":18446744073709551615,"method":"x"}', 18446744073709551615),
        # Not a request: a response's id is the server's own numbering.
        (b'{"jsonrpc":"2.0","id":7,"result":{}}', None),
        (b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}', None),
        # Ids decode would not accept either.
        (b'{"id":1.5,"method":"x"}', None),
        (b'{"id":1e3,"method":"x"}', None),
        (b'{"id":99999999999999999999,"method":"x"}', None),
        (b'{"id":true,"method":"x"}', None),
        (b'{"id":null,"method":"x"}', None),
        (b'{"id":[1],"method":"x"}', None),
        (b'{"id":"\\ud800","method":"x"}', None),
        # "id" that is not the top-level member.
        (b'{"method":"x","params":{"id":5}}', None),
        (b'{"method":"x","params":"\\"id\\":5}"}', None),
        (b'{"method":"x","params":{"a":"}\\"id\\":5"},"note":"\\"id\\":6}"}', None),
        (b'{"method":"x","x\\"id":5}', None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"x"}]', None),
        (b'"id"', None),
        (b'{"method" "x","id":5}', None),  # not JSON: decode would answer null
        (b"", None),
    ],
)
def test_reads_the_top_level_id_of_requests_only(document: bytes, expected: object) -> None:
    assert peek(document) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"csv": PADDING}}, 7),
        ({"method": "tools/call", "params": {"csv": PADDING}, "jsonrpc": "2.0", "id": "z"}, "z"),
        ({"method": "tools/call", "params": {"csv": PADDING}, "id": 'a"b\\'}, 'a"b\\'),
        # The id is in neither edge: unknown, so None rather than a guess.
        ({"method": "tools/call", "params": {"csv": PADDING}, "id": 9, "jsonrpc": "2.0"}, None),
        # The method is past the head: it may be a response, so None.
        ({"params": {"csv": PADDING}, "method": "tools/call", "id": 9}, None),
        ({"id": 7, "result": {"text": PADDING}}, None),
        # Lookalikes inside the huge value, at both edges.
        ({"id": 1, "method": "x", "params": {"t": '"id":2,' + PADDING + ',"id":3}'}}, 1),
        ({"method": "x", "params": {"t": PADDING + '","id":3}'}}, None),
    ],
)
def test_an_oversize_message_is_read_from_its_edges(message: dict[str, Any], expected: object) -> None:
    document = orjson.dumps(message)
    assert len(document) > HEAD_BYTES + TAIL_BYTES
    assert peek(document) == expected


def test_a_repeated_id_at_both_edges_is_the_last_one() -> None:
    document = b'{"id":1,"method":"x","params":"' + PADDING.encode() + b'","id":2}'
    assert peek(document) == 2


@pytest.mark.parametrize(
    ("head", "tail"),
    [
        (b'{"method":"x","id":12', b""),  # the id may go on: 123
        (b'{"method":"x","id":"ab', b""),
        (b'{"method":"x","id', b""),
        (b'{"method":"x","params":"a', b'"id":5}'),  # nothing shows the quote starts a key
        (b'{"method":"x","params":"a', b'\\"id":5}'),
        (b'{"method":"x","params":"a', b'\\",\\"id\\":\\"6\\"}"}'),
    ],
)
def test_what_the_edges_cut_off_is_not_guessed(head: bytes, tail: bytes) -> None:
    assert peek_request_id(head, tail) is None


def test_decode_refuses_an_oversize_request_with_its_id_size_limit_and_flag() -> None:
    frame = orjson.dumps({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"csv": PADDING}})
    with pytest.raises(MessageTooLarge) as caught:
        decode(frame, max_bytes=1000)
    error = caught.value
    assert (error.code, error.http_status, error_id(error)) == (-32600, 413, 41)
    assert f"{len(frame)} bytes" in error.message
    assert "limit of 1000 bytes" in error.message
    assert "--max-message-bytes" in error.message
    assert error.to_error_object()["data"] == {"size": len(frame), "limit": 1000}


def test_decode_reads_the_id_of_a_text_frame_too() -> None:
    frame = json.dumps({"jsonrpc": "2.0", "method": "x", "params": {"t": "é" * 50}, "id": "é"})
    with pytest.raises(MessageTooLarge) as caught:
        decode(frame, max_bytes=20)
    assert caught.value.request_id == "é"


def test_too_large_without_a_readable_id_answers_null() -> None:
    error = too_large(5000, 1000, b'{"jsonrpc":"2.0","params":{"a":"', b'xxxx"}}')
    assert error_id(error) is None


# -- properties ---------------------------------------------------------------------------------

ids = st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.integers() | st.text(max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    # Strings that look like the members being searched for.
    | st.text(max_size=10)
    | st.sampled_from(['"id":1}', '{"id":2', '\\"id\\":3', ',"id":"4"}', '"method"']),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["id", "a", "method"]), children)
    ),
    max_leaves=10,
)
members = st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x", 'i"d']),
    json_values | ids,
    max_size=6,
)


def expected_id(document: bytes) -> object:
    """The id `decode` would answer the document with, if it is a request: as orjson reads it."""
    try:
        message = orjson.loads(document)
    except orjson.JSONDecodeError:
        return None
    value = message.get("id")
    usable = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    return value if "method" in message and usable else None


@st.composite
def serialized(draw: st.DrawFn) -> bytes:
    """A JSON object with its members in any order, compact or indented, escaped or not."""
    message = draw(members)
    ordered = {key: message[key] for key in draw(st.permutations(list(message)))}
    indent = draw(st.none() | st.integers(0, 2))
    return json.dumps(ordered, indent=indent, ensure_ascii=draw(st.booleans())).encode()


@given(serialized())
def test_a_whole_message_gives_exactly_the_id_decode_would_read(document: bytes) -> None:
    assert peek_request_id(document, document) == expected_id(document)


@given(serialized(), st.integers(0, 200), st.integers(0, 200))
def test_cut_edges_give_the_id_or_none_never_another(document: bytes, head_size: int, tail_size: int) -> None:
    found = peek_request_id(document[:head_size], document[len(document) - tail_size :])
    assert found is None or found == expected_id(document)


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_any_bytes_give_an_id_or_none(head: bytes, tail: bytes) -> None:
    found = peek_request_id(head, tail)
    assert found is None or isinstance(found, int | str)
