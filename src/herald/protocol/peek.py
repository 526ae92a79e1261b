"""The id of a message too large to parse, read from its first and last bytes.

A refusal answered with `"id": null` leaves the client waiting for a reply that never
comes, so an oversize request should be refused with its own id. Parsing the whole
document to learn it would spend exactly the memory and time the limit is there to
save; instead the transport keeps a bounded head and tail of the message and this
module reads the top level of the object from them:

- the head is walked member by member (keys decoded, values skipped by bracket depth,
  strings by a regex that honours escapes), so an `"id"` inside a string or a nested
  object is never mistaken for the request's; it stops at the first member that runs
  past the head, which is usually the huge `params`.
- the tail answers for clients that write `"id"` last (the TypeScript SDK does): in
  valid JSON the scalar right before the closing brace is the last top-level value,
  so `"id":<value>}` at the very end is the request's id.

The id counts only when the head shows a top-level `"method"`: an oversize *response*
carries an id of the server's own numbering, and an error with that id would fail an
unrelated request of the client's. Nothing here raises; what cannot be read is None,
and the refusal then goes out with a null id as before.
"""

from __future__ import annotations

import re
from typing import Final

import orjson

from herald.protocol.messages import RequestId

#: How much of an oversize message a transport keeps for `peek_request_id`.
HEAD_BYTES: Final = 64 * 1024
TAIL_BYTES: Final = 4 * 1024

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRUCTURE = re.compile(rb'["{}\[\]]')
_SCALAR = re.compile(rb"[^\s,:{}\[\]\"]+")
_INTEGER = re.compile(rb"-?(?:0|[1-9][0-9]*)")
_WHITESPACE = re.compile(rb"[ \t\r\n]*")
_WHITESPACE_CHARS = b" \t\r\n"


def peek_request_id(head: bytes, tail: bytes) -> RequestId | None:
    """The id of the request whose first bytes are `head` and last bytes `tail`, if readable.

    `head` and `tail` may overlap or be the whole message. An id is a string or an
    integer, read as `decode` would read it; anything else gives None.
    """
    head_id, is_request = _scan_head(head)
    if not is_request:
        return None
    tail_id = _last_member_id(tail)
    return tail_id if tail_id is not None else head_id


def _scan_head(data: bytes) -> tuple[RequestId | None, bool]:
    """(the last readable top-level id, whether a top-level "method" was seen) in `data`."""
    pos = _skip_whitespace(data, 0)
    if data[pos : pos + 1] != b"{":
        return None, False
    found: RequestId | None = None
    is_request = False
    pos += 1
    while True:
        pos = _skip_whitespace(data, pos)
        key_match = _STRING.match(data, pos)
        if key_match is None:
            break
        key = _string(key_match.group())
        pos = _skip_whitespace(data, key_match.end())
        if data[pos : pos + 1] != b":":
            break
        pos = _skip_whitespace(data, pos + 1)
        end = _value_end(data, pos)
        if key == "method":
            is_request = True
        if end is None:
            break
        if key == "id":
            found = _scalar_id(data[pos:end])  # a repeated key: the last one wins, as in orjson
        pos = _skip_whitespace(data, end)
        if data[pos : pos + 1] != b",":
            break
        pos += 1
    return found, is_request


def _value_end(data: bytes, pos: int) -> int | None:
    """Where the JSON value starting at `pos` ends, or None when it runs past `data`."""
    first = data[pos : pos + 1]
    if first == b'"':
        match = _STRING.match(data, pos)
        return match.end() if match else None
    if first in (b"{", b"["):
        depth = 0
        while (mark := _STRUCTURE.search(data, pos)) is not None:
            symbol = mark.group()
            if symbol == b'"':
                string = _STRING.match(data, mark.start())
                if string is None:
                    return None
                pos = string.end()
                continue
            depth += 1 if symbol in (b"{", b"[") else -1
            pos = mark.end()
            if depth == 0:
                return pos
        return None
    scalar = _SCALAR.match(data, pos)
    # A scalar that reaches the end of `data` may have been cut short ("12" of "123").
    return scalar.end() if scalar and scalar.end() < len(data) else None


def _last_member_id(data: bytes) -> RequestId | None:
    """The id when the object in `data` ends with `"id": <string or integer>}`."""
    end = _skip_whitespace_back(data, len(data) - 1)
    if end < 0 or data[end] != ord("}"):
        return None
    last = _skip_whitespace_back(data, end - 1)
    if last < 0:
        return None
    if data[last] == ord('"'):
        start = data.rfind(b'"', 0, last)
        while start > 0 and _escaped(data, start):
            start = data.rfind(b'"', 0, start)
        if start < 0:
            return None
    else:
        start = last
        while start > 0 and data[start - 1] in b"-0123456789":
            start -= 1
    colon = _skip_whitespace_back(data, start - 1)
    if colon < 0 or data[colon] != ord(":"):
        return None
    key_end = _skip_whitespace_back(data, colon - 1)
    if key_end < 3 or data[key_end - 3 : key_end + 1] != b'"id"':
        return None
    before = _skip_whitespace_back(data, key_end - 4)
    if before < 0 or data[before] not in b",{":
        return None  # cut off here, or `"id"` is the end of a longer key such as `"x\"id"`
    return _scalar_id(data[start : last + 1])


def _scalar_id(token: bytes) -> RequestId | None:
    """A string or 64-bit integer id from one JSON token; None for any other value."""
    if token.startswith(b'"'):
        return _string(token)
    if _INTEGER.fullmatch(token) is None:
        return None
    value = orjson.loads(token)  # integers past 64 bits come back as floats, as in `decode`
    return value if isinstance(value, int) else None


def _string(token: bytes) -> str | None:
    try:
        value = orjson.loads(token)
    except orjson.JSONDecodeError:
        return None  # bad escapes, control characters, or bytes that are not UTF-8
    return value if isinstance(value, str) else None


def _escaped(data: bytes, index: int) -> bool:
    """Whether the byte at `index` follows an odd run of backslashes."""
    run = 0
    while index - run - 1 >= 0 and data[index - run - 1] == ord("\\"):
        run += 1
    return run % 2 == 1


def _skip_whitespace(data: bytes, pos: int) -> int:
    match = _WHITESPACE.match(data, pos)
    return match.end() if match else pos


def _skip_whitespace_back(data: bytes, pos: int) -> int:
    while pos >= 0 and data[pos] in _WHITESPACE_CHARS:
        pos -= 1
    return pos
