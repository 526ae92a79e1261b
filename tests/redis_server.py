"""A private `redis-server` for the tests: its own free port, nothing on disk, stopped after.

The machine's shared Redis (127.0.0.1:6379) is never touched. Under `CI=true` a missing
`redis-server` is a failure; elsewhere the tests that need one are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from herald.testing import free_port, wait_until_listening


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Start a redis-server on a free loopback port; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is not installed (make test installs it: make service-deps)")
        pytest.skip("redis-server is not installed; run make service-deps")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(port, process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
