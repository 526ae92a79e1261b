"""What people sent stays with the user who runs the server: the job store and the message
log are created readable by their owner alone, whatever the umask, and an existing file
keeps the mode its owner chose."""

from __future__ import annotations

import shlex
import stat
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from herald.private_files import ensure_private_file
from tests.servers import REPO

pytestmark = pytest.mark.slow  # a server process under a permissive umask

CSV = "name,department,interests,budget\nAna,Eng,hiking;coffee,40\n"


def others_may_read(path: Path) -> bool:
    return bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))


async def test_a_served_store_and_message_log_are_private_under_a_permissive_umask(tmp_path: Path) -> None:
    store, log = tmp_path / "data" / "jobs.db", tmp_path / "wire.jsonl"
    store.parent.mkdir()  # a --store folder must exist; only the files are the server's to make
    serve = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet"]
    serve += ["--store", str(store), "--message-log", str(log)]
    command = f"umask 000 && exec {shlex.join(serve)}"
    parameters = StdioServerParameters(command="sh", args=["-c", command], cwd=REPO)
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = await session.call_tool("start_bulk_gift_analysis", {"csv": CSV})
        assert not started.is_error, started
        files = sorted(path.name for path in store.parent.iterdir())
        assert files == ["jobs.db", "jobs.db-shm", "jobs.db-wal"], files
        for path in [*store.parent.iterdir(), log]:
            assert not others_may_read(path), (path.name, oct(path.stat().st_mode))
    assert log.stat().st_size > 0, "the log was written"


@pytest.mark.parametrize("mode", [0o644, 0o600])
def test_an_existing_file_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "shared.db"
    path.write_bytes(b"kept")
    path.chmod(mode)
    ensure_private_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.read_bytes() == b"kept"
