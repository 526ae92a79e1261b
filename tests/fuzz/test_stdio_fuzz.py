"""Any lines on stdin get the documented refusal or a valid answer from `giftgenius serve --stdio`:
never an internal error (-32603), a traceback, or a server that stops answering.

One server for the module, as a host would run it; each example writes a few lines (JSON-RPC
messages, batches, or bytes), then a ping of its own, and reads everything up to the
ping's answer.
"""

from __future__ import annotations

import itertools
import json
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import FUZZ
from tests.fuzz.strategies import BODIES
from tests.servers import REPO

pytestmark = pytest.mark.slow  # a stdio server process under fuzzing

SERVER = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]
WITHIN = 20.0
LINES = st.lists(BODIES.map(lambda body: json.dumps(body).encode()) | st.binary(max_size=80), max_size=4)


class Stdio:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            SERVER, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self.process.stdout is not None
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)
        self._buffer = b""
        self._pings = itertools.count()

    def exchange(self, lines: list[bytes]) -> list[Any]:
        """Write `lines` and a ping; every message read until the ping's answer."""
        assert self.process.stdin is not None
        ping = f"fuzz-ping-{next(self._pings)}"
        for line in lines:
            self.process.stdin.write(line.replace(b"\n", b" ") + b"\n")
        self.process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode() + b"\n"
        )
        self.process.stdin.flush()
        read: list[Any] = []
        deadline = time.monotonic() + WITHIN
        while not any(isinstance(message, dict) and message.get("id") == ping for message in read):
            read.append(json.loads(self._line(deadline)))
        return read

    def _line(self, deadline: float) -> bytes:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            assert self._selector.select(max(0.0, deadline - time.monotonic())), (
                "the server stopped answering"
            )
            chunk = self.process.stdout.read1(65536)  # type: ignore[attr-defined]
            assert chunk, f"the server exited: {self.process.stderr.read() if self.process.stderr else b''!r}"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def close(self) -> bytes:
        """End of input, as a host closing its pipe: the server must exit cleanly; its stderr."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self.process.stdin.close()
        self.process.stdout.read()
        errors = self.process.stderr.read()
        assert self.process.wait(timeout=30) == 0, errors
        return errors


@pytest.fixture(scope="module")
def stdio() -> Iterator[Stdio]:
    server = Stdio()
    try:
        yield server
    finally:
        errors = server.close()
        assert b"Traceback" not in errors, errors.decode(errors="replace")


@FUZZ
@given(lines=LINES)
def test_any_lines(stdio: Stdio, lines: list[bytes]) -> None:
    for message in stdio.exchange(lines):
        for item in message if isinstance(message, list) else [message]:
            error = item.get("error") if isinstance(item, dict) else None
            assert not isinstance(error, dict) or error.get("code") != -32603, item
