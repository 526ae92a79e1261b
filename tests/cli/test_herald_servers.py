"""`herald run|inspect|call|read|prompt|job` against a developer's own server file and URL.

As a person uses them: a subprocess each, the server started by `herald run` over HTTP
or spawned over stdio for one command. Every mistake is a line or two with status 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from herald.testing import free_port, wait_until_listening
from tests.wire.recording import HERALD

pytestmark = pytest.mark.slow  # the herald command, in processes of its own

SERVER = textwrap.dedent(
    '''
    from typing import Literal

    from pydantic import Field
    from typing_extensions import Annotated

    from herald import Server, SyncJobContext, ToolUI, Widget

    server = Server("cli demo")
    cards = Widget("cards", html="<!doctype html><title>cards</title>", description="Shows sums")


    @server.tool(ui=ToolUI(cards))
    def add(a: int, b: Annotated[int, Field(ge=0, le=100)] = 1) -> int:
        """Add two numbers."""
        return a + b


    @server.tool
    def shout(word: str, mode: Literal["loud", "louder"] = "loud") -> str:
        """Say a word loudly."""
        return word.upper() + ("!!" if mode == "louder" else "!")


    @server.resource("demo://motto", mime_type="text/plain")
    def motto() -> str:
        return "keep it exact"


    @server.prompt()
    def greet(name: str) -> str:
        return f"Greet {name} warmly."


    @server.job
    def count(to: int, ctx: SyncJobContext) -> dict[str, int]:
        """Count, one step at a time."""
        for step in range(1, to + 1):
            ctx.report_progress(100 * step / to, f"step {step}")
        return {"counted": to}
    '''
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "two.py").write_text("from herald import Server\nfirst = Server('a')\nsecond = Server('b')\n")
    (tmp_path / "none.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "failing.py").write_text("import json\nraise RuntimeError('no database at start')\n")
    return tmp_path


def herald(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "XDG_DATA_HOME": str(folder / "data"), "COLUMNS": "200"}
    return subprocess.run(
        [*HERALD, *args], cwd=folder, capture_output=True, text=True, timeout=120, env=environment
    )


@pytest.fixture
def served(folder: Path) -> Iterator[str]:
    """`herald run server.py --http` on a free port; its URL."""
    port = free_port()
    environment = {**os.environ, "XDG_DATA_HOME": str(folder / "data")}
    errors = (folder / "run.err").open("wb")
    process = subprocess.Popen(
        [*HERALD, "run", "server.py", "--http", "--port", str(port)],
        cwd=folder,
        env=environment,
        stderr=errors,
    )
    try:
        wait_until_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
        errors.close()


@pytest.mark.parametrize("where", ["file", "url"])
def test_inspect_lists_what_the_server_offers(
    folder: Path, request: pytest.FixtureRequest, where: str
) -> None:
    target = "server.py" if where == "file" else request.getfixturevalue("served")
    shown = herald(folder, "inspect", target)
    assert shown.returncode == 0, shown.stderr
    for expected in (
        "Tools",
        "add",
        "a, b?",
        "Resources",
        "demo://motto",
        "Prompts",
        "greet",
        "Widgets",
        "cards",
    ):
        assert expected in shown.stdout
    offered = json.loads(herald(folder, "inspect", target, "--json").stdout)
    assert offered["server"]["name"] == "cli demo"
    assert {tool["name"] for tool in offered["tools"]} >= {"add", "shout", "count"}
    widgets = [entry for entry in offered["resources"] if entry["uri"].startswith("ui://")]
    assert len(widgets) == 1


def test_call_read_and_prompt_a_server_file(folder: Path) -> None:
    called = herald(folder, "call", "server.py", "add", "--arg", "a=2", "--arg", "b=3")
    assert (called.returncode, called.stdout.strip()) == (0, "5")
    raw = json.loads(herald(folder, "call", "server.py", "add", "--arg", "a=2", "--json").stdout)
    assert raw["structuredContent"] == {"result": 3}
    assert herald(folder, "read", "server.py", "demo://motto").stdout.strip() == "keep it exact"
    prompted = herald(folder, "prompt", "server.py", "greet", "--arg", "name=Ada")
    assert "Greet Ada warmly." in prompted.stdout


def test_a_job_started_in_a_spawned_server_is_followed_to_its_end(folder: Path) -> None:
    called = herald(folder, "call", "server.py", "count", "--arg", "to=3")
    assert called.returncode == 0, called.stderr
    assert "following it to its end" in called.stderr
    assert "result: herald://jobs/" in called.stderr


def test_jobs_of_a_running_server_by_url_and_by_its_file(folder: Path, served: str) -> None:
    started = json.loads(herald(folder, "call", served, "count", "--arg", "to=2", "--json").stdout)
    job_id = started["structuredContent"]["jobId"]
    watched = herald(folder, "job", "watch", served, job_id)
    assert watched.returncode == 0, watched.stderr
    assert json.loads(herald(folder, "job", "result", served, job_id).stdout) == {"counted": 2}
    by_file = herald(folder, "job", "status", "server.py", job_id, "--json")
    assert by_file.returncode == 0, by_file.stderr
    assert json.loads(by_file.stdout)["status"] == "completed", "the file's server reads the same store"
    out = folder / "result.json"
    assert herald(folder, "job", "result", served, job_id, "--out", str(out)).returncode == 0
    assert json.loads(out.read_text()) == {"counted": 2}
    said = (folder / "run.err").read_text()
    assert f"jobs are kept in {folder / 'data' / 'cli-demo' / 'store.db'}" in said


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["call", "server.py", "add", "--arg", "a=x"],
            'a: "x" is not of type "integer" (it must be a whole number)',
        ),
        (
            ["call", "server.py", "add", "--arg", "a=1", "--arg", "b=500"],
            "it must be a whole number from 0 to 100",
        ),
        (
            ["call", "server.py", "shout", "--arg", "word=hi", "--arg", "mode=quiet"],
            'it must be one of "loud", "louder"',
        ),
        (["call", "server.py", "add"], '"a" is a required property'),
        (["call", "server.py", "nope"], "unknown tool 'nope'"),
        (["call", "missing.py", "add"], "missing.py does not exist"),
        (["call", "ftp://example.com/mcp", "add"], "is not an http:// or https:// URL"),
        (["run", "none.py"], "makes no herald Server at its top level"),
        (["run", "two.py"], "makes several servers: first, second"),
        (["run", "server.py:missing"], "has no 'missing'"),
        (["run", "server.py:cards"], "is a Widget, not a herald Server"),
        (["run", "broken.py"], "broken.py:1"),
        (["run", "failing.py"], "RuntimeError: no database at start"),
        (["run", "server.py", "--store", "bogus"], "unknown store 'bogus'"),
        (["run", "server.py", "--reload"], "--reload needs --http"),
        (["run", "server.py", "--metrics"], "--metrics needs --http"),
        (["run", "server.py", "--http", "--reload", "--metrics"], "--metrics does not work with --reload"),
        (["run", "server.py", "--http", "--metrics", "--metrics-path", "metrics"], "must start with /"),
        (["run", "."], "is a directory, not a Python file"),
    ],
)
def test_mistakes_are_said_in_a_line_with_status_2(folder: Path, args: list[str], said: str) -> None:
    result = herald(folder, *args)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr


def test_reload_serves_the_file_as_it_changes(folder: Path) -> None:
    port = free_port()
    environment = {**os.environ, "XDG_DATA_HOME": str(folder / "data")}
    process = subprocess.Popen(
        [*HERALD, "run", "server.py", "--http", "--reload", "--port", str(port)],
        cwd=folder,
        env=environment,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_listening(port, process)
        assert herald(folder, "call", url, "add", "--arg", "a=1").stdout.strip() == "2"
        with (folder / "server.py").open("a") as source:
            source.write("\n\n@server.tool\ndef ping_back() -> str:\n    return 'pong'\n")
        answer = ""
        for _ in range(120):  # bounded: the reloader notices within a second or two
            answer = herald(folder, "call", url, "ping_back").stdout.strip()
            if answer == "pong":
                break
        assert answer == "pong", "the new tool is served without a restart by hand"
    finally:
        process.terminate()
        process.wait(timeout=30)
