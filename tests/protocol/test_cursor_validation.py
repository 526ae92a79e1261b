"""Cursors any process can decode, and readable params errors."""

from __future__ import annotations

import pytest

from herald.protocol.cursor import decode_cursor, encode_cursor, paginate
from herald.protocol.errors import InvalidParams, MethodNotFound
from herald.protocol.validation import validate_request_params


def test_cursor_round_trip_and_listing_check() -> None:
    cursor = encode_cursor("tools", 40)
    assert decode_cursor("tools", cursor) == 40
    with pytest.raises(InvalidParams):
        decode_cursor("prompts", cursor)


@pytest.mark.parametrize(
    "cursor", ["", "!!!", "bm90IGpzb24", encode_cursor("tools", -1), "eyJsIjoidG9vbHMiLCJvIjoiYSJ9"]
)
def test_invalid_cursors(cursor: str) -> None:
    with pytest.raises(InvalidParams):
        decode_cursor("tools", cursor)


def test_paginate_walks_every_item_once() -> None:
    items: list[dict[str, object]] = [{"name": str(index)} for index in range(7)]
    seen: list[dict[str, object]] = []
    cursor: str | None = None
    while True:
        page = paginate("tools", items, cursor, 3)
        seen.extend(page["tools"])  # type: ignore[arg-type]  # the page holds the item list
        next_cursor = page.get("nextCursor")
        if next_cursor is None:
            break
        assert isinstance(next_cursor, str)
        cursor = next_cursor
    assert seen == items


@pytest.mark.parametrize(
    ("method", "params", "hint"),
    [
        ("tools/call", {"tool": "x", "args": {}}, "got 'tool'; the field is called 'name'"),
        ("resources/read", {"resourceId": "a://b"}, "got 'resourceId'; the field is called 'uri'"),
        ("prompts/get", {"prompt": "p"}, "got 'prompt'; the field is called 'name'"),
    ],
)
def test_wrong_field_names_are_named(method: str, params: dict[str, object], hint: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        validate_request_params(method, "2025-11-25", params)
    assert hint in caught.value.message


def test_method_absent_in_version_is_not_found() -> None:
    with pytest.raises(MethodNotFound):
        validate_request_params("server/discover", "2025-11-25", {})
    with pytest.raises(MethodNotFound):
        validate_request_params("logging/setLevel", "2026-07-28", {"level": "info"})
