"""`--arg NAME=VALUE`, and `NAME=@FILE` for a value of any size, as curl reads one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from herald.cli.arguments import parse_arguments
from herald.cli.problems import UserError

SCHEMA = {"type": "object", "properties": {"csv": {"type": "string"}, "budget": {"type": "number"}}}


def test_a_value_from_a_file_is_its_text_whatever_its_size(tmp_path: Path) -> None:
    people = tmp_path / "people.csv"
    big = "name,interests\n" + "".join(f"Person {n},tea\n" for n in range(20_000))  # 400 KB
    people.write_bytes(b"\xef\xbb\xbf" + big.encode())  # as spreadsheets save UTF-8
    budget = tmp_path / "budget.json"
    budget.write_text("75\n")
    parsed = parse_arguments([f"csv=@{people}", f"budget=@{budget}"], SCHEMA)
    assert parsed == {"csv": big, "budget": 75}, (
        "the text without its byte-order mark; JSON where not a string"
    )


def test_a_doubled_at_sign_is_a_literal_one() -> None:
    assert parse_arguments(["csv=@@handle"], SCHEMA) == {"csv": "@handle"}


@pytest.mark.parametrize(
    ("content", "name", "said"),
    [
        (None, "missing.csv", "there is no file"),
        (None, ".", "is a folder, not a file"),
        (b"name\nJos\xe9\n", "latin1.csv", "is not UTF-8 text"),
    ],
)
def test_a_file_that_cannot_be_read_is_said_plainly(
    tmp_path: Path, content: bytes | None, name: str, said: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError) as raised:
        parse_arguments([f"csv=@{path}"], SCHEMA)
    assert said in raised.value.message
    assert raised.value.message.startswith("--arg csv=@")


@pytest.mark.slow  # a giftgenius process
def test_the_readmes_bulk_example_takes_a_file_past_the_command_lines_limit(tmp_path: Path) -> None:
    people = tmp_path / "employees.csv"
    rows = "".join(f"Person {n},Dept {n % 7},tea;hiking,40\n" for n in range(8_000))
    people.write_text("name,department,interests,budget\n" + rows)
    assert people.stat().st_size > 128 * 1024, "more than one argument may hold on Linux"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "giftgenius",
            "call",
            "start_bulk_gift_analysis",
            "--arg",
            f"csv=@{people}",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"jobId"' in done.stdout
