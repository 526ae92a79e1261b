"""A private `redis-server` for the tests (`herald.testing.redis_server`), with the test policy.

The machine's shared Redis (127.0.0.1:6379) is never touched. Under `CI=true` a missing
`redis-server` is a failure; elsewhere the tests that need one are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import pytest

from herald import testing


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Start a redis-server on a free loopback port; yields its URL."""
    if shutil.which("redis-server") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is not installed (make test installs it: make service-deps)")
        pytest.skip("redis-server is not installed; run make service-deps")
    with testing.redis_server() as url:
        yield url
