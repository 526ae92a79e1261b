"""`giftgenius bulk` with a CSV over the message limit: the file goes in parts, so it fits;
a limit below one part's message ends at once, saying which flag raises it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
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
        timeout=180,  # it used to hang here for ever
        check=False,
    )


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("bulk") / "big.csv"
    text = employees(140_000)
    assert 4.5e6 < len(text) < 6e6  # about 5 MB: over the default limit once sent as JSON
    source.write_text(text)
    return source


def test_a_csv_over_the_spawned_servers_message_limit_goes_in_parts(big_csv: Path) -> None:
    done = bulk(str(big_csv))
    assert done.returncode == 0, done.stderr
    result = orjson.loads(big_csv.with_suffix(".gifts.json").read_bytes())
    assert result["summary"]["people"] == 140_000
    assert "Traceback" not in done.stderr


def test_max_message_bytes_reaches_the_spawned_server(tmp_path: Path) -> None:
    source = tmp_path / "team.csv"
    source.write_text(GOOD)
    done = bulk(str(source), "--max-message-bytes", "200")
    assert done.returncode == 2, done.stderr
    assert "the server's limit is 200 bytes" in done.stderr
    assert "Run bulk again with --max-message-bytes 1048576" in done.stderr


def test_a_csv_over_an_http_servers_message_limit_goes_in_parts(big_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gifts.json"
    with giftgenius_http("memory") as served:
        done = bulk(str(big_csv), "--url", served.url, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert orjson.loads(out.read_bytes())["summary"]["people"] == 140_000
