"""`giftgenius serve` as a real subprocess on a loopback port, for the tests that need one."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from herald.testing import free_port, wait_until_listening

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ServedProcess:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@contextlib.contextmanager
def giftgenius_http(
    store: str, *options: str, port: int | None = None, kill: bool = False
) -> Iterator[ServedProcess]:
    """Serve GiftGenius over HTTP with `store` (`sqlite:///PATH` or `memory`) until the block ends.

    The process is stopped and awaited whatever happened: terminated (a clean shutdown), or
    killed with `kill=True`, as a crash would end it.
    """
    port = free_port() if port is None else port
    argv = [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--port", str(port), "--store", store]
    process = subprocess.Popen([*argv, *options], cwd=REPO)
    try:
        wait_until_listening(port, process)
        yield ServedProcess(port, process)
    finally:
        if kill:
            process.kill()
        else:
            process.terminate()
        process.wait(timeout=10)
