"""Running things through `herald record` for the tests: the real command, as a user runs it.

`recorded_stdio` starts `herald record -o LOG -- CMD` and talks raw JSON-RPC lines to it;
`recorded_http` starts `herald record --upstream URL` in front of a server and gives
its URL. Both stop the recorder as a person would (end of input, or Ctrl-C), so the log
is complete when the block ends.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from herald.testing import free_port
from herald.wire.format import schema
from tests.servers import REPO, listening

HERALD = [sys.executable, "-c", "from herald.cli.main import main; main()"]
MISTAKES = Path(__file__).with_name("mistakes.py")
LIMIT = 20.0

Message = dict[str, Any]


class LineClient:
    """Raw JSON-RPC over a process's stdin/stdout, each wait bounded by `LIMIT`."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self._selector = selectors.DefaultSelector()
        self._selector.register(process.stdout, selectors.EVENT_READ)
        self._buffer = b""
        self.received: list[Message] = []

    def send(self, message: Any) -> list[Message]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        wanted = _request_ids(message)
        got: list[Message] = []
        while wanted:
            reply = self._read()
            got.append(reply)
            if "method" in reply:
                continue
            if reply.get("id") in wanted:
                wanted.discard(reply["id"])
            elif reply.get("id") is None:
                wanted.pop()  # an answer that lost its id answers the one we wait for
        return got

    def _read(self) -> Message:
        assert self.process.stdout is not None
        deadline = time.monotonic() + LIMIT
        while b"\n" not in self._buffer:
            if not self._selector.select(timeout=max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"no answer within {LIMIT} s")
            chunk = self.process.stdout.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                raise EOFError("the server closed its output")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: Message = json.loads(line)
        self.received.append(message)
        return message


def _request_ids(message: Any) -> set[Any]:
    items = message if isinstance(message, list) else [message]
    return {item["id"] for item in items if "method" in item and "id" in item}


@contextlib.contextmanager
def recorded_stdio(log: Path, command: list[str]) -> Iterator[LineClient]:
    """`herald record -o log -- command`, ended by closing its input once the block is done."""
    process = subprocess.Popen(
        [*HERALD, "record", "-o", str(log), "--", *command],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        yield LineClient(process)
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=LIMIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@contextlib.contextmanager
def recorded_http(log: Path, upstream: str) -> Iterator[str]:
    """`herald record --upstream upstream`; yields the URL clients use. Stopped with SIGINT, as by Ctrl-C."""
    with recording_proxy(log, upstream) as (url, _):
        yield url


@contextlib.contextmanager
def recording_proxy(log: Path, upstream: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`recorded_http`, with the recorder's process too."""
    port = free_port()
    argv = [*HERALD, "record", "-o", str(log), "--upstream", upstream, "--port", str(port)]
    with listening(argv, port) as process:
        path = "/" + upstream.split("://", 1)[1].split("/", 1)[1]
        yield f"http://127.0.0.1:{port}{path}", process
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=LIMIT) == 0


def peak_resident(process: subprocess.Popen[bytes]) -> int:
    """The most memory `process` (still running) has held resident so far, in bytes (Linux's VmHWM)."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {process.pid}")


@contextlib.contextmanager
def mistakes_over_http(mistake: str | None) -> Iterator[str]:
    """The mistakes server over Streamable HTTP; yields its URL."""
    port = free_port()
    argv = [sys.executable, str(MISTAKES), "--http", "--port", str(port)]
    with listening([*argv, *(["--mistake", mistake] if mistake else [])], port):
        yield f"http://127.0.0.1:{port}/mcp"


class HttpLineClient:
    """Raw JSON-RPC over Streamable HTTP, handshake era: JSON or SSE answers, the session header kept."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session: str | None = None
        self.http = httpx.Client(timeout=LIMIT)

    def send(self, message: Any) -> list[Message]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.session is not None:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = "2025-11-25"
        response = self.http.post(self.url, content=json.dumps(message), headers=headers)
        self.session = response.headers.get("mcp-session-id", self.session)
        if response.status_code == 202 or not response.content:
            return []
        if response.headers["content-type"].startswith("text/event-stream"):
            return [
                json.loads(line.removeprefix("data:").strip())
                for line in response.text.splitlines()
                if line.startswith("data:") and line.removeprefix("data:").strip()
            ]
        return [response.json()]


def valid_records(log: Path) -> list[Message]:
    """Every line of the log, each checked against the published record schema."""
    import jsonschema_rs

    validator = jsonschema_rs.validator_for(schema())
    lines = [json.loads(line) for line in log.read_bytes().splitlines() if line.strip()]
    for line in lines:
        validator.validate(line)
    return lines
