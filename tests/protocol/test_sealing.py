"""Sealed requestState: opens with the right key and purpose only, and hides its content."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.errors import InvalidParams
from herald.protocol.sealing import seal, unseal

KEY = b"k" * 32


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=10,
    )
)
def test_round_trip(value: object) -> None:
    assert unseal(KEY, "tools/call:t", seal(KEY, "tools/call:t", value)) == value


def test_content_is_not_readable() -> None:
    token = seal(KEY, "p", {"answers": {"name": {"content": {"name": "Alice Secret"}}}})
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert b"Alice" not in raw
    assert seal(KEY, "p", 1) != seal(KEY, "p", 1), "a fresh nonce every time"


@pytest.mark.parametrize(
    ("key", "purpose", "mangle"),
    [
        (KEY, "p", lambda token: token + "-TAMPERED"),
        (KEY, "p", lambda token: token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]),
        (KEY, "other", lambda token: token),
        (b"another key", "p", lambda token: token),
        (KEY, "p", lambda token: "!!!"),
        (KEY, "p", lambda token: ""),
    ],
)
def test_refused(key: bytes, purpose: str, mangle: Callable[[str], str]) -> None:
    token = seal(KEY, "p", {"state": 1})
    with pytest.raises(InvalidParams):
        unseal(key, purpose, mangle(token))
