"""Store URLs as people write them: SQLAlchemy's slashes, plain paths, and typos refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from herald.stores.location import sqlite_path


@pytest.fixture(autouse=True)
def _in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_three_slashes_are_relative_to_the_working_directory(tmp_path: Path) -> None:
    assert sqlite_path("sqlite:///tmp/gifts.db") == tmp_path / "tmp" / "gifts.db"


def test_four_slashes_are_absolute() -> None:
    assert sqlite_path("sqlite:////var/lib/gifts.db") == Path("/var/lib/gifts.db")


@pytest.mark.parametrize("written", ["gifts.db", "data/gifts", "./x.sqlite3", "/srv/store"])
def test_a_plain_path_is_a_file(written: str, tmp_path: Path) -> None:
    expected = Path(written) if written.startswith("/") else tmp_path / written
    assert sqlite_path(written) == expected.absolute()


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is a directory"):
        sqlite_path(str(tmp_path))


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("bogus", "unknown store 'bogus'"),
        ("redis:/typo", "unknown store"),
        ("postgres://db/gifts", "unknown store"),
        ("sqlite:///", "names no file"),
        ("sqlite:///data/", "names no file"),
    ],
)
def test_what_is_not_a_store_is_refused(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        sqlite_path(url)
