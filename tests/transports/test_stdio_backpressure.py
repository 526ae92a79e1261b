"""A stdio client that does not read its answers for a while: the server's memory stays bounded.

A real `giftgenius serve --stdio` gets thousands of reads of its widget resource (40 KB
each) from a client that reads nothing until the server has done all it can. The server
stops taking requests in while their answers wait, so its peak memory (VmHWM) grows by a
few megabytes, not by every answer (160 MB before). Then the client reads, and gets every
answer, each once.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import orjson
import pytest

from giftgenius.app import build_server
from tests.servers import REPO, stop

pytestmark = pytest.mark.slow

READS = 4000
#: How much the server's peak memory may grow while the answers wait: generous, and far
#: below the 190 MB that holding every answer took.
MAX_GROWTH_BYTES = 64 * 1024 * 1024
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def widget_uri() -> str:
    return next(uri for uri in build_server().registry.resources if uri.startswith("ui://"))


HANDSHAKE = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}) + b"\n"


def requests() -> bytes:
    """The handshake, then every read: all the client writes."""
    uri = widget_uri()
    reads = (
        {"jsonrpc": "2.0", "id": number, "method": "resources/read", "params": {"uri": uri}}
        for number in range(1, READS + 1)
    )
    return HANDSHAKE + b"".join(orjson.dumps(message) + b"\n" for message in reads)


def peak_memory(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc: this test needs Linux")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def wait_until_idle(pid: int, deadline: float = 60.0) -> None:
    """Until the server has done all it can without the client reading: it uses no CPU for a while."""
    give_up = time.monotonic() + deadline
    last, unchanged = cpu_ticks(pid), 0
    while unchanged < 10:
        assert time.monotonic() < give_up, "the server never stopped working"
        time.sleep(0.05)
        now = cpu_ticks(pid)
        unchanged = unchanged + 1 if now == last else 0
        last = now


@contextmanager
def stdio_server(stdin: int | IO[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--store", "memory"]
    process = subprocess.Popen(argv, cwd=REPO, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        stop(process)


def ready_peak() -> int:
    """The peak memory of a server that has answered `initialize` and nothing else."""
    with stdio_server(subprocess.PIPE) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(HANDSHAKE)
        server.stdin.flush()
        assert orjson.loads(server.stdout.readline())["id"] == 0
        return peak_memory(server.pid)


def read_answers(stdout: IO[bytes]) -> list[int]:
    """The ids of every answer, as they come; each must be the widget's contents."""
    uri = widget_uri()
    ids: list[int] = []
    while len(ids) < READS + 1:
        line = stdout.readline()
        assert line, "the server closed stdout before answering everything"
        answer = orjson.loads(line)
        if answer["id"] != 0:
            assert answer["result"]["contents"][0]["uri"] == uri
        ids.append(answer["id"])
    return ids


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_answers_that_wait_for_the_client_do_not_grow_the_server(stdin: str, tmp_path: Path) -> None:
    sent = requests()
    source = tmp_path / "requests.jsonl"
    source.write_bytes(sent)
    before = ready_peak()
    with source.open("rb") as file, stdio_server(subprocess.PIPE if stdin == "pipe" else file) as server:
        assert server.stdout is not None
        if stdin == "pipe":
            assert server.stdin is not None
            writing = threading.Thread(target=server.stdin.write, args=(sent,), daemon=True)
            writing.start()  # it blocks once the server stops reading: the pipe is full
        wait_until_idle(server.pid)
        ids = read_answers(server.stdout)
        growth = peak_memory(server.pid) - before
    assert sorted(ids) == list(range(READS + 1)), "every answer, each once"
    assert ids[0] == 0, "initialize is answered before any read"
    assert growth < MAX_GROWTH_BYTES, f"the server grew by {growth / 2**20:.0f} MB"
