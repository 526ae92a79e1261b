"""The JSON-RPC envelope: classification, error codes, ids keeping their type."""

from __future__ import annotations

import contextlib
import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.codec import Batch, decode, encode
from herald.protocol.errors import InvalidRequest, MessageTooLarge, ParseError, ProtocolError
from herald.protocol.messages import ErrorResponse, Notification, Request, Response


def test_request_keeps_id_type() -> None:
    assert decode(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == Request(1, "ping")
    assert decode(b'{"jsonrpc":"2.0","id":"1","method":"ping"}') == Request("1", "ping")
    assert Request(1, "ping") != Request("1", "ping")


def test_notification_has_no_id() -> None:
    assert decode(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Notification(
        "notifications/initialized"
    )


def test_responses() -> None:
    assert decode(b'{"jsonrpc":"2.0","id":7,"result":{}}') == Response(7, {})
    error = decode(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')
    assert isinstance(error, ErrorResponse)
    assert error.id is None
    assert error.code == -32700


@pytest.mark.parametrize(
    "frame",
    [
        b"{not json",
        b"\xff\xfe",
        b"",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"',
    ],
)
def test_parse_error(frame: bytes) -> None:
    with pytest.raises(ParseError) as caught:
        decode(frame)
    assert caught.value.code == -32700


@pytest.mark.parametrize(
    ("frame", "answer_id"),
    [
        (b"[]", None),
        (b'"ping"', None),
        (b"42", None),
        (b'{"id":1,"method":"ping"}', 1),
        (b'{"jsonrpc":"1.0","id":"a","method":"ping"}', "a"),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":{},"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":3,"method":5}', 3),
        (b'{"jsonrpc":"2.0","id":4,"method":"x","params":[1]}', 4),
        (b'{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"m"}}', 5),
        (b'{"jsonrpc":"2.0","id":6}', 6),
    ],
)
def test_invalid_request(frame: bytes, answer_id: object) -> None:
    with pytest.raises(InvalidRequest) as caught:
        decode(frame)
    assert caught.value.code == -32600
    assert caught.value.request_id == answer_id


def test_oversize_message_is_refused_before_parsing() -> None:
    frame = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 200}})
    with pytest.raises(MessageTooLarge) as caught:
        decode(frame, max_bytes=100)
    assert caught.value.code == -32600
    assert caught.value.http_status == 413
    assert str(len(frame)) in caught.value.message


def test_batch_items_are_judged_one_by_one() -> None:
    batch = decode(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}, {"id":2}, 5]')
    assert isinstance(batch, Batch)
    first, second, third = batch.items
    assert first == Request(1, "ping")
    assert isinstance(second, ErrorResponse)
    assert (second.id, second.code) == (2, -32600)
    assert isinstance(third, ErrorResponse)
    assert third.id is None


@given(st.binary(max_size=200))
def test_any_bytes_give_a_message_or_our_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
envelope_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.none() | st.integers() | st.text(max_size=5) | st.floats(allow_nan=False) | st.booleans(),
        "method": st.text(max_size=10) | st.integers(),
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)


@given(envelope_like | json_values)
def test_any_json_gives_a_message_or_our_error(value: object) -> None:
    try:
        decoded = decode(json.dumps(value))
    except ProtocolError:
        return
    items = decoded.items if isinstance(decoded, Batch) else (decoded,)
    for item in items:
        assert isinstance(item, Request | Notification | Response | ErrorResponse)


# JSON integers outside 64 bits are read as floats by orjson, so ids stay within them.
ids = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=5)
message_strategy = st.one_of(
    st.builds(Request, ids, st.text(min_size=1, max_size=10)),
    st.builds(Notification, st.text(min_size=1, max_size=10)),
    st.builds(Response, ids, st.dictionaries(st.text(max_size=5), st.integers(-1000, 1000))),
)


@given(message_strategy)
def test_encode_round_trips(message: Request | Notification | Response) -> None:
    assert decode(encode(message)) == message
