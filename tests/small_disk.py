"""A real disk that fills up: a small tmpfs mounted for one test, and a way to fill it."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted on a fresh directory until the block ends.

    Mounting takes root. Where it cannot be done the test is skipped, saying why, except
    under CI (`CI=true`), where a test that cannot run is a failure.
    """
    directory = Path(tempfile.mkdtemp(prefix="herald-small-disk-"))
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
            capture_output=True,
            text=True,
            check=False,
        )
        if mounted.returncode != 0:
            why = f"a full disk needs a tmpfs, and mount said: {mounted.stderr.strip() or mounted.returncode}"
            if os.environ.get("CI") == "true":
                pytest.fail(why)
            pytest.skip(why)
        try:
            yield directory
        finally:
            subprocess.run(["umount", str(directory)], check=True)
    finally:
        directory.rmdir()


def fill(directory: Path) -> Path:
    """Write a file in `directory` until the disk says it has no room left; returns the file."""
    filler = directory / "filler"
    block = bytes(64 * 1024)
    with filler.open("wb", buffering=0) as file:
        try:
            while True:
                file.write(block)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler
