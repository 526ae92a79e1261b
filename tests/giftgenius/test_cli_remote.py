"""The CLI against a server someone runs: `call|read|prompt --url`, `bulk --url`, `giftgenius job`.

Both eras, through the real commands and a real `giftgenius serve`. The last test kills
the server mid-job with SIGKILL and starts it again on the same store and port: `bulk`
says it lost the connection, keeps retrying, and ends with the result files written.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from herald.testing import free_port
from tests.giftgenius.commands import GIFTGENIUS, WIDE, run
from tests.giftgenius.test_bulk_job import employees
from tests.modern import structured
from tests.servers import ServedProcess, giftgenius_http, running_past

pytestmark = pytest.mark.slow  # the command line against a server process

ERAS = [pytest.param([], id="handshake"), pytest.param(["--modern"], id="2026-07-28")]
#: Long enough that the kill lands mid-job, on two busy cores.
PEOPLE = 30_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProcess]:
    store = tmp_path_factory.mktemp("store") / "store.db"
    with giftgenius_http(f"sqlite:///{store}") as server:
        yield server


@pytest.mark.parametrize("era", ERAS)
def test_call_read_and_prompt_talk_to_the_running_server(era: list[str], served: ServedProcess) -> None:
    arguments = ["-a", "occasion=birthday", "-a", "budget=60", "-a", "recipient=loves coffee"]
    called = run("call", "suggest_gifts", "--url", served.url, "--json", *arguments, *era)
    assert called.returncode == 0, called.stderr
    gifts = orjson.loads(called.stdout)["structuredContent"]["gifts"]
    assert gifts
    assert all(gift["price"] <= 60 for gift in gifts)
    catalog = run("read", "giftgenius://catalog", "--url", served.url, *era)
    assert catalog.returncode == 0, catalog.stderr
    assert "categories" in orjson.loads(catalog.stdout)
    prompt = run(
        "prompt",
        "gift_congrats_style",
        "--url",
        served.url,
        "-a",
        "recipient_name=Ana",
        "-a",
        "occasion=birthday",
        *era,
    )
    assert prompt.returncode == 0, prompt.stderr
    assert "Ana" in prompt.stdout
    assert "[user]" in prompt.stdout


@pytest.mark.parametrize("era", ERAS)
def test_a_url_with_a_trailing_slash_reaches_the_same_endpoint(era: list[str], served: ServedProcess) -> None:
    arguments = ["-a", "occasion=birthday", "-a", "budget=60", "-a", "recipient=loves coffee"]
    called = run("call", "suggest_gifts", "--url", served.url + "/", "--json", *arguments, *era)
    assert called.returncode == 0, called.stderr
    assert orjson.loads(called.stdout)["structuredContent"]["gifts"]


@pytest.mark.parametrize("era", ERAS)
def test_a_job_started_with_call_lives_on_and_giftgenius_job_reads_it(
    era: list[str], served: ServedProcess, tmp_path: Path
) -> None:
    csv_text = "name,department,interests,budget\nAna,Eng,hiking;coffee,40\nBo,Ops,puzzles,30\n"
    started = run(
        "call", "start_bulk_gift_analysis", "--url", served.url, "--json", "-a", f"csv={csv_text}", *era
    )
    assert started.returncode == 0, started.stderr
    job_id = orjson.loads(started.stdout)["structuredContent"]["jobId"]
    watched = run("job", "watch", job_id, "--url", served.url, *era)
    assert watched.returncode == 0, watched.stderr
    assert "Picked gifts for all 2 people" in watched.stderr
    status = run("job", "status", job_id, "--url", served.url, "--json", *era)
    assert orjson.loads(status.stdout)["status"] == "completed"
    result = run("job", "result", job_id, "--url", served.url, *era, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    document = orjson.loads((tmp_path / f"{job_id}.gifts.json").read_bytes())
    assert [person["name"] for person in document["people"]] == ["Ana", "Bo"]
    assert (tmp_path / f"{job_id}.gifts.csv").read_text().startswith("name,department,")


def test_job_result_of_an_unfinished_job_says_to_wait(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    # No worker runs on this store: the job stays pending for as long as the test looks.
    with giftgenius_http(store, "--no-worker") as server:
        job_id = structured(server.url, "start_bulk_gift_analysis", {"csv": employees(3)})["jobId"]
        early = run("job", "result", job_id, "--url", server.url, cwd=tmp_path)
    assert early.returncode == 1, early.stderr
    assert f"job {job_id} is still pending" in early.stderr
    assert "giftgenius job watch" in early.stderr
    assert not list(tmp_path.glob("*.gifts.*"))


@pytest.mark.parametrize("era", ERAS)
def test_bulk_survives_its_server_being_killed_and_restarted(era: list[str], tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    people = tmp_path / "people.csv"
    people.write_text(employees(PEOPLE))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with giftgenius_http(store, "--job-lease", "1", port=port, kill=True, measured=False):
        bulk = subprocess.Popen(
            [*GIFTGENIUS, "bulk", str(people), "--url", url, "--retry-for", "120", *era],
            stderr=subprocess.PIPE,
            text=True,
            env=WIDE,
        )
        lines = _Lines(bulk)
        job_id = lines.wait_for(" started").split()[1]
        assert asyncio.run(running_past(store, job_id, 5)) is not None, "the job ended before the kill"
    # Killed on leaving the block. bulk must notice, and say so, while nothing listens.
    lines.wait_for("connection lost")
    with giftgenius_http(store, "--job-lease", "1", port=port, measured=False):
        assert bulk.wait(timeout=240) == 0, lines.text()
    output = lines.text()
    assert "reconnected to" in output
    assert "Traceback" not in output
    document = orjson.loads(people.with_suffix(".gifts.json").read_bytes())
    assert len(document["people"]) == PEOPLE
    assert people.with_suffix(".gifts.csv").read_text().count("\n") == PEOPLE + 1


class _Lines:
    """A process's stderr, read as it comes, so a test can wait for a line without sleeping."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._seen: list[str] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._reader.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            with self._arrived:
                self._seen.append(line)
                self._arrived.notify_all()

    def wait_for(self, words: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                for line in self._seen:
                    if words in line:
                        return line
                left = deadline - time.monotonic()
                assert left > 0, f"no {words!r} in {self.text()}"
                self._arrived.wait(left)

    def text(self) -> str:
        with self._arrived:
            return "".join(self._seen)
