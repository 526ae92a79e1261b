"""Bytes to messages and back: the JSON-RPC 2.0 envelope, with no I/O.

`decode` never raises anything but our `ProtocolError` subclasses, whatever the bytes
(a hypothesis test holds it to that). A single broken message raises; inside a batch
each broken item becomes an `ErrorResponse` in place, because JSON-RPC answers batch
items one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from herald.protocol.errors import InvalidRequest, MessageTooLarge, ParseError, ProtocolError
from herald.protocol.messages import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from herald.protocol.peek import HEAD_BYTES, TAIL_BYTES, peek_request_id

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Batch:
    """A JSON array of messages. Items that were not valid messages are error responses."""

    items: tuple[Message, ...]


def _readable_id(raw: dict[str, Any]) -> RequestId | None:
    """The id to answer an invalid message with, when it has a usable one."""
    value = raw.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _invalid(raw: dict[str, Any], reason: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid request: {reason}", request_id=_readable_id(raw))


def message_from_json(raw: object) -> Message:
    """Classify one decoded JSON value as a message, or raise `InvalidRequest`.

    The id of a message that cannot be classified is kept in `error.request_id` so
    the caller can answer with it when it is well formed.
    """
    if not isinstance(raw, dict):
        raise InvalidRequest(f"Invalid request: expected a JSON object, got {_json_type(raw)}")
    if raw.get("jsonrpc") != "2.0":
        raise _invalid(raw, 'the "jsonrpc" member must be exactly "2.0"')
    method = raw.get("method")
    if method is not None:
        if not isinstance(method, str):
            raise _invalid(raw, 'the "method" member must be a string')
        params = raw.get("params")
        if params is not None and not isinstance(params, dict):
            raise _invalid(raw, f'"params" must be an object, got {_json_type(params)}')
        if "id" not in raw:
            return Notification(method, params)
        request_id = _readable_id(raw)
        if request_id is None:
            raise _invalid(raw, f'"id" must be a string or an integer, got {_json_type(raw["id"])}')
        return Request(request_id, method, params)
    has_result, has_error = "result" in raw, "error" in raw
    if has_result == has_error:
        raise _invalid(raw, 'a message needs "method", or exactly one of "result" and "error"')
    response_id = _readable_id(raw)
    if has_result:
        if response_id is None or not isinstance(raw["result"], dict):
            raise _invalid(raw, 'a response needs a string or integer "id" and an object "result"')
        return Response(response_id, raw["result"])
    error = raw["error"]
    if not (isinstance(error, dict) and isinstance(error.get("code"), int) and "message" in error):
        raise _invalid(raw, 'an error response needs an "error" object with "code" and "message"')
    if response_id is None and raw.get("id") is not None:
        raise _invalid(raw, '"id" must be a string, an integer or null')
    return ErrorResponse(response_id, error)


def decode(data: bytes | str, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> Message | Batch:
    """Parse one frame (a line on stdio, a body on HTTP) into a message or a batch."""
    if len(data) > max_bytes:
        edges = (data[:HEAD_BYTES], data[-TAIL_BYTES:])
        head, tail = (edge.encode("utf-8", "replace") if isinstance(edge, str) else edge for edge in edges)
        raise too_large(len(data), max_bytes, head, tail)
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"Parse error: {exc}") from None
    if isinstance(raw, list):
        if not raw:
            raise InvalidRequest("Invalid request: an empty batch")
        return Batch(tuple(_item(entry) for entry in raw))
    return message_from_json(raw)


def too_large(size: int, limit: int, head: bytes, tail: bytes) -> MessageTooLarge:
    """The refusal of a `size`-byte message over `limit`, given its first and last bytes.

    Transports that never hold the whole message (stdio skips an oversize line as it
    streams past) keep `HEAD_BYTES` and `TAIL_BYTES` of it and call this, so every path
    refuses with the request's id when it can be read and with the same wording.
    """
    return MessageTooLarge(size, limit, request_id=peek_request_id(head, tail))


def _item(entry: object) -> Message:
    try:
        return message_from_json(entry)
    except ProtocolError as exc:
        return error_response(error_id(exc), exc)


def error_id(error: ProtocolError) -> RequestId | None:
    """The id an error about an unreadable message should be answered with."""
    return error.request_id if isinstance(error, InvalidRequest) else None


def error_response(request_id: RequestId | None, error: ProtocolError) -> ErrorResponse:
    """Build the wire answer for a protocol error."""
    return ErrorResponse(request_id, error.to_error_object())


Outgoing = Message | tuple[Message, ...]


def encode(message: Outgoing) -> bytes:
    """Serialize one message, or a batch reply as an array, to compact UTF-8 JSON."""
    if isinstance(message, tuple):
        return orjson.dumps([item.to_json() for item in message])
    return orjson.dumps(message.to_json())


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
