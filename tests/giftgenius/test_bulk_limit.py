"""`giftgenius bulk` with a CSV over the message limit ends at once, saying which flag raises it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.giftgenius.test_bulk_job import GOOD, employees
from tests.servers import giftgenius_http

pytestmark = pytest.mark.slow  # server processes

LIMIT = 4 * 1024 * 1024


def bulk(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "giftgenius", "bulk", *arguments],
        capture_output=True,
        text=True,
        timeout=60,  # it used to hang here for ever
        check=False,
    )


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("bulk") / "big.csv"
    text = employees(140_000)
    assert 4.5e6 < len(text) < 6e6  # about 5 MB: over the default limit once sent as JSON
    source.write_text(text)
    return source


def test_a_csv_over_the_spawned_servers_limit_names_it_and_the_flag(big_csv: Path) -> None:
    done = bulk(str(big_csv))
    assert done.returncode == 2, done.stderr
    assert f"the server's limit is {LIMIT} bytes" in done.stderr
    assert "--max-message-bytes" in done.stderr
    assert "Traceback" not in done.stderr
    assert not big_csv.with_suffix(".gifts.json").exists()


def test_max_message_bytes_reaches_the_spawned_server(tmp_path: Path) -> None:
    source = tmp_path / "team.csv"
    source.write_text(GOOD)
    done = bulk(str(source), "--max-message-bytes", "200")
    assert done.returncode == 2, done.stderr
    assert "the server's limit is 200 bytes" in done.stderr
    assert "Run bulk again with --max-message-bytes 1048576" in done.stderr


def test_a_csv_over_an_http_servers_limit_names_it_and_the_serve_flag(big_csv: Path) -> None:
    with giftgenius_http("memory") as served:
        done = bulk(str(big_csv), "--url", served.url)
    assert done.returncode == 2, done.stderr
    assert f"the limit is {LIMIT}" in done.stderr
    assert "giftgenius serve --max-message-bytes" in done.stderr
    assert "Traceback" not in done.stderr


def test_max_message_bytes_is_refused_with_url(tmp_path: Path) -> None:
    source = tmp_path / "team.csv"
    source.write_text(GOOD)
    done = bulk(str(source), "--url", "http://127.0.0.1:9/mcp", "--max-message-bytes", "10")
    assert done.returncode == 2
    assert "the server at --url has its own" in done.stderr
