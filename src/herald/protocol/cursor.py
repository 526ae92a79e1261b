"""Opaque pagination cursors that carry their own position.

A cursor is base64url JSON holding the list it pages and the offset of the next item,
so any process (another replica, a restarted server) can continue a listing without
remembering anything. A cursor that does not decode, or belongs to another list, is
invalid params.
"""

from __future__ import annotations

import base64
import binascii

import orjson

from herald.protocol.errors import InvalidParams


def encode_cursor(listing: str, offset: int) -> str:
    raw = orjson.dumps({"l": listing, "o": offset})
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(listing: str, cursor: str) -> int:
    """The offset a cursor points at; `InvalidParams` unless it was made for `listing`."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise InvalidParams(f"Invalid cursor {cursor!r}: it was not issued by this server") from None
    if not isinstance(data, dict) or data.get("l") != listing:
        raise InvalidParams(f"Invalid cursor {cursor!r}: it belongs to another listing")
    offset = data.get("o")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InvalidParams(f"Invalid cursor {cursor!r}: it holds no valid position")
    return offset


def paginate(
    listing: str, items: list[dict[str, object]], cursor: str | None, page_size: int
) -> dict[str, object]:
    """One page of `items` under the key `listing`, with `nextCursor` when more follow."""
    start = 0 if cursor is None else decode_cursor(listing, cursor)
    if start > len(items):
        raise InvalidParams(f"Invalid cursor {cursor!r}: it points past the end of the list")
    page: dict[str, object] = {listing: items[start : start + page_size]}
    if start + page_size < len(items):
        page["nextCursor"] = encode_cursor(listing, start + page_size)
    return page
