"""A person's mistakes that the command refuses before any work: in a line or two, exit status 2.

These run the command in this process (`run_here`), since no server is involved; the ones
that need a server, a port or a store on disk are in `test_mistakes_live.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from herald.testing import free_port
from tests.giftgenius.commands import PEOPLE, check, said
from tests.giftgenius.commands import run_here as run


def test_a_negative_budget_is_refused_before_any_work(people: Path) -> None:
    check(run("bulk", str(people), "--budget", "-5"), "--budget", "0.01")


def test_a_directory_is_not_a_csv(tmp_path: Path) -> None:
    check(run("bulk", "."), "is a directory, not a CSV file")


def test_a_missing_csv_is_named(tmp_path: Path) -> None:
    check(run("bulk", str(tmp_path / "nobody.csv")), "nobody.csv does not exist")


def test_a_binary_file_is_refused_as_not_csv(tmp_path: Path) -> None:
    image = tmp_path / "photo.csv"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    check(run("bulk", str(image)), "photo.csv", "not a CSV")


def test_an_out_path_in_a_missing_directory_is_refused_before_the_job(people: Path, tmp_path: Path) -> None:
    # Nothing listens at the URL: the check must come before any connection is tried.
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = run("bulk", str(people), "--url", url, "--out", str(tmp_path / "nodir" / "x.json"))
    check(done, "nodir does not exist", "mkdir -p")
    assert "cannot reach" not in said(done)


def test_an_out_path_that_is_a_directory_is_refused(people: Path, tmp_path: Path) -> None:
    check(run("bulk", str(people), "--out", str(tmp_path)), "is a directory", "Name a file in it")


def test_an_empty_occasion_is_refused(people: Path) -> None:
    check(run("bulk", str(people), "--occasion", " "), "--occasion is empty")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("127.0.0.1:8000/mcp", "is not an http:// or https:// URL"),
        ("http://127.0.0.1:80000/mcp", "is not a valid URL"),
        ("http:///mcp", "names no host"),
        ("http://[::1/mcp", "is not a valid URL"),
    ],
)
def test_a_malformed_url_is_refused(url: str, words: str) -> None:
    check(run("prompt", "gift_congrats_style", "--url", url), words)


def test_an_argument_without_a_value_is_explained() -> None:
    check(run("call", "suggest_gifts", "--arg", "budget"), "'budget' is not NAME=VALUE")


def test_a_misspelt_option_gets_a_usage_error(people: Path) -> None:
    check(run("bulk", str(people), "--budgte", "5"), "No such option")


def test_a_misspelt_command_gets_a_usage_error() -> None:
    check(run("serv"), "No such command")


@pytest.mark.parametrize("port", ["0", "80000", "-1"])
def test_a_port_out_of_range_is_refused(port: str) -> None:
    check(run("serve", "--port", port, "--store", "memory", "--quiet"), "Invalid value for '--port'")


def test_a_worker_on_a_memory_store_is_refused() -> None:
    check(run("worker", "--store", "memory"), "needs a store that other processes share")


def test_an_out_path_that_names_the_csv_export_is_refused(people: Path) -> None:
    check(run("bulk", str(people), "--out", str(people.with_name("gifts.csv"))), "names the JSON result")


def test_an_out_path_that_would_overwrite_the_input_is_refused(people: Path) -> None:
    # people.json's CSV export would be people.csv, the input itself.
    done = run("bulk", str(people), "--out", str(people.with_suffix(".json")))
    check(done, "over the input")
    assert people.read_text() == PEOPLE


def test_pruning_a_store_that_is_not_there_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    check(run("store", "prune", "--store", str(missing)), f"there is no store at {missing}")
    assert not missing.exists()
