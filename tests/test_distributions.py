"""The two distributions as people install them: herald alone is slim, GiftGenius builds on it.

Both wheels are built from this checkout. herald's goes into an empty virtual environment,
where the README's first server runs over stdio; what else got installed is checked
against what herald's metadata says it needs, so an optional dependency that creeps into
the core (redis, aiohttp, typer, the gift catalog) is caught here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.messages import INITIALIZE, INITIALIZED
from tests.servers import REPO

pytestmark = pytest.mark.slow  # builds wheels and a virtual environment

UV = Path(sys.executable).with_name("uv")
#: What only an extra, or GiftGenius, may bring.
NOT_IN_THE_CORE = {"redis", "aiohttp", "typer", "rich", "pyjwt", "httpx", "giftgenius", "snowballstemmer"}


def first_server_of_the_readme() -> str:
    """The README's first Python block: the server a developer writes first."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Writing a server with herald") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def build(tmp: Path) -> dict[str, Path]:
    subprocess.run(
        [str(UV), "build", "--wheel", "--all-packages", "-o", str(tmp), "-q"], cwd=REPO, check=True
    )
    return {path.name.split("-")[0]: path for path in tmp.glob("*.whl")}


def test_herald_alone_serves_the_readme_server(tmp_path: Path) -> None:
    wheels = build(tmp_path / "dist")
    assert set(wheels) == {"herald", "giftgenius"}
    with zipfile.ZipFile(wheels["herald"]) as herald_wheel:
        assert not [name for name in herald_wheel.namelist() if name.startswith("giftgenius/")]
    with zipfile.ZipFile(wheels["giftgenius"]) as app_wheel:
        names = app_wheel.namelist()
        assert "giftgenius/data/catalog.json" in names
        assert "giftgenius/widget/gifts.html" in names
        metadata = app_wheel.read(next(name for name in names if name.endswith("METADATA"))).decode()
    assert re.search(r"^Requires-Dist: herald\[", metadata, re.M), "GiftGenius depends on herald"

    venv = tmp_path / "venv"
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    subprocess.run(
        [str(UV), "pip", "install", "-q", "--python", str(python), str(wheels["herald"])],
        check=True,
        env=environment,
    )
    listed = subprocess.run(
        [str(UV), "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    )
    installed = {entry["name"].lower() for entry in json.loads(listed.stdout)}
    assert "herald" in installed
    assert not installed & NOT_IN_THE_CORE, f"the core pulled in {installed & NOT_IN_THE_CORE}"

    server = tmp_path / "server.py"
    server.write_text(first_server_of_the_readme())
    lines = [
        INITIALIZE,
        INITIALIZED,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "count_words", "arguments": {"text": "one two three"}},
        },
    ]
    served = subprocess.run(
        [str(python), str(server)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**environment, "XDG_DATA_HOME": str(tmp_path / "data")},
    )
    answers = {
        answer["id"]: answer for answer in map(json.loads, served.stdout.splitlines()) if "id" in answer
    }
    assert answers[2]["result"]["structuredContent"] == {"words": 3}, served.stderr

    command = subprocess.run(
        [str(venv / "bin" / "herald"), "inspect", str(server)], capture_output=True, text=True
    )
    assert command.returncode == 2
    assert command.stderr.strip() == (
        "error: the herald command needs herald[cli] (no module 'typer'): pip install 'herald[cli]'"
    )
