"""The run order's list of long files names files that exist (a renamed one would go last)."""

from __future__ import annotations

from tests.conftest import LONGEST_FIRST, TESTS


def test_every_long_file_named_exists() -> None:
    assert [name for name in LONGEST_FIRST if not (TESTS / name).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
