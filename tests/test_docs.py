"""The getting-started page's code runs as written: each step's `server.py`, and its test.

Every Python block after a `<!-- step: NAME -->` marker in docs/getting-started.md is a
whole file; each server is loaded the way `herald run` loads it and driven by an
in-memory client, and the page's own test script runs against the job step's server.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from herald.cli.loading import load_server, server_file
from herald.testing import InMemoryClient, connect, job_ended
from tests.servers import REPO
from tests.wire.recording import HERALD

PAGE = REPO / "docs" / "getting-started.md"


def steps() -> dict[str, str]:
    """Each marked Python block of the page, by its step's name."""
    found = re.findall(r"<!-- step: (\w+) -->\n```python\n(.*?)```", PAGE.read_text(), re.S)
    return dict(found)


@contextmanager
def written(folder: Path, step: str) -> Iterator[Path]:
    path = folder / "server.py"
    path.write_text(steps()[step])
    saved = list(sys.path)
    try:
        yield path
    finally:
        sys.path[:] = saved
        sys.modules.pop("server", None)


@asynccontextmanager
async def serving(folder: Path, step: str) -> AsyncIterator[InMemoryClient]:
    with written(folder, step) as path:
        async with connect(load_server(server_file(str(path)))) as client:
            yield client


def test_the_page_has_every_step() -> None:
    assert list(steps()) == ["tool", "job", "widget", "test"]


async def test_the_tool_step(tmp_path: Path) -> None:
    async with serving(tmp_path, "tool") as client:
        tools = {tool["name"] for tool in (await client.request("tools/list"))["tools"]}
        assert tools == {"add_note", "list_notes"}
        added = await client.call_tool("add_note", {"text": "milk"})
        assert added["structuredContent"] == {"result": 1}
        assert added["content"] == [{"type": "text", "text": "1"}]
        listed = await client.call_tool("list_notes")
        assert listed["structuredContent"] == {"result": ["milk"]}


async def test_the_job_step(tmp_path: Path) -> None:
    async with serving(tmp_path, "job") as client:
        job_id = (await client.call_tool("tidy_notes"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await job_ended(client.server, job_id)
        status: dict[str, Any] = (await client.call_tool("get_job_status", {"jobId": job_id}))[
            "structuredContent"
        ]
        assert status["status"] == "completed"
        assert [e["percentage"] for e in status["events"] if e["type"] == "job.progress"][-1] == 100
        read = await client.request("resources/read", {"uri": status["resultResourceId"]})
        assert orjson.loads(read["contents"][0]["text"]) == {"notes": ["Call the plumber", "Eggs", "Milk"]}


async def test_the_widget_step(tmp_path: Path) -> None:
    async with serving(tmp_path, "widget") as client:
        [tool] = (await client.request("tools/list"))["tools"]
        uri = tool["_meta"]["ui"]["resourceUri"]
        assert tool["_meta"]["openai/outputTemplate"] == uri, "both hosts' metadata"
        document = (await client.request("resources/read", {"uri": uri}))["contents"][0]
        assert document["mimeType"] == "text/html;profile=mcp-app"
        assert "ui/initialize" in document["text"]
        assert (await client.call_tool("list_notes"))["structuredContent"] == {"result": ["milk", "eggs"]}


@pytest.mark.slow  # processes of their own
def test_the_test_step_and_the_commands(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(steps()["job"])
    (tmp_path / "test_notebook.py").write_text(steps()["test"])
    ran = subprocess.run(
        [sys.executable, "test_notebook.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    (tmp_path / "server.py").write_text(steps()["tool"])
    called = subprocess.run(
        [*HERALD, "call", "server.py", "add_note", "--arg", "text=5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert (called.returncode, called.stdout.strip()) == (0, "1"), called.stderr
