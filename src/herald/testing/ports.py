"""Loopback ports for servers under test, and waiting for a server to listen on one.

A port the kernel picks (`bind` to port 0) comes from its ephemeral range, the range it
also gives every outgoing connection: between the probe closing it and the server
binding it, another test's client or server may take it, and the test then talks to a
stranger. So ports come from below that range, where the kernel hands out none, and
each pytest-xdist worker draws from a block of its own.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import subprocess
import time
from typing import Any, Final

#: The ports handed out: below Linux's default ephemeral range (32768 and up).
FIRST_PORT: Final = 20_000
#: How many ports each test process has to itself (room for eight workers).
PORTS_PER_PROCESS: Final = 1_500


def _process_block() -> range:
    """This process's ports: its pytest-xdist worker's block (`gwN`), else the first."""
    worker = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    index = int(worker.group(1)) % 8 if worker else 0
    start = FIRST_PORT + index * PORTS_PER_PROCESS
    return range(start, start + PORTS_PER_PROCESS)


_candidates = itertools.cycle(_process_block())


def free_port() -> int:
    """A loopback port nobody listens on right now, that no other test process picks."""
    for _ in range(PORTS_PER_PROCESS):
        port = next(_candidates)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use (a server still running, another program): the next one
            return port
    raise OSError(f"no free port in {_process_block()}")


def wait_until_listening(
    port: int, process: subprocess.Popen[Any] | None = None, *, timeout: float = 20
) -> None:
    """Block until a server accepts connections on `port`; fail early if its process exits.

    Servers offer no readiness signal but their socket, so this polls it, within a deadline.
    """
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listened on port {port} within {timeout} s") from None
            time.sleep(0.05)
