"""`nested_deeper_than`: the nesting guard for values the wire types leave open."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.validation import MAX_JSON_DEPTH, nested_deeper_than

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=30,
)


def depth(value: Any) -> int:
    """The reference, recursive on purpose: an object or array is one level, scalars none."""
    if isinstance(value, dict):
        return 1 + max((depth(child) for child in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(child) for child in value), default=0)
    return 0


def arrays(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@given(JSON, st.integers(min_value=0, max_value=8))
def test_agrees_with_the_recursive_depth(value: Any, limit: int) -> None:
    assert nested_deeper_than(value, limit) == (depth(value) > limit)


def test_the_limit_itself_is_allowed() -> None:
    assert not nested_deeper_than({"x": arrays(MAX_JSON_DEPTH - 1)})
    assert nested_deeper_than({"x": arrays(MAX_JSON_DEPTH)})
    assert not nested_deeper_than("scalar", 0)


def test_far_beyond_the_recursion_limit_it_still_answers() -> None:
    assert nested_deeper_than(arrays(100_000))
