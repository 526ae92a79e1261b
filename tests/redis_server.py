"""A private `redis-server` for the tests (`herald.testing.redis_server`), with the test policy.

The machine's shared Redis (127.0.0.1:6379) is never touched. Under `CI=true` a missing
`redis-server` is a failure; elsewhere the tests that need one are skipped, saying why.
`restartable_redis` is one the test can stop and start again on the same port, with or
without an append-only file, as an operator restarts Redis.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from herald import testing


def _require_redis() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is not installed (make test installs it: make service-deps)")
        pytest.skip("redis-server is not installed; run make service-deps")
    return binary


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Start a redis-server on a free loopback port; yields its URL."""
    _require_redis()
    with testing.redis_server() as url:
        yield url


class RestartableRedis:
    """A private redis-server on one port that the test stops and starts again.

    With `appendonly`, every write is in an append-only file in `directory` (fsync'd every
    second, Redis's default), so a restart keeps what was written; without, Redis comes
    back empty, as after a restart of a cache or a failover to an empty replica.
    """

    def __init__(self, directory: Path, *, appendonly: bool) -> None:
        self._binary = _require_redis()
        self.directory = directory
        self.appendonly = appendonly
        self.port = testing.free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "yes" if self.appendonly else "no", "--dir", str(self.directory)]
        self._process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        testing.wait_until_listening(self.port, self._process)

    def stop(self) -> None:
        """SIGTERM, as an operator's restart sends: Redis writes its append-only file and exits."""
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None

    def restart(self, down_seconds: float) -> None:
        """Stop Redis, leave it down `down_seconds`, and start it again on the same port."""
        self.stop()
        time.sleep(down_seconds)  # the outage itself is what is being tested, not a race
        self.start()


@contextlib.contextmanager
def restartable_redis(directory: Path, *, appendonly: bool) -> Iterator[RestartableRedis]:
    redis = RestartableRedis(directory, appendonly=appendonly)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()
