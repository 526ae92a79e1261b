"""What the command line tests share: a small CSV of people to hand the commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.giftgenius.commands import PEOPLE


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(PEOPLE)
    return path
