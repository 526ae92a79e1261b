"""`giftgenius serve` as a real subprocess on a loopback port, for the tests that need one.

Under `make unit` every Python subprocess is traced for coverage (`patch = ["subprocess"]`),
which makes CPU-bound work two to three times slower. A server whose work is a big bulk
analysis, measured in-process by the bulk tests already, is started with `measured=False`:
untraced, at the speed a user's server runs, and asserted on the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from herald.jobs.store import JobStore
from herald.testing import free_port, wait_until_listening

REPO = Path(__file__).resolve().parents[1]
GIFTGENIUS = [sys.executable, "-m", "giftgenius"]
#: What a Python process reads to start measuring coverage (see `measured`).
COVERAGE_STARTERS = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")


def environment(*, measured: bool, extra: dict[str, str] | None = None) -> dict[str, str] | None:
    """A subprocess's environment: this one's, less what starts coverage unless `measured`,
    plus `extra`."""
    if measured and not extra:
        return None  # inherited
    inherited = {
        name: value for name, value in os.environ.items() if measured or name not in COVERAGE_STARTERS
    }
    return inherited | (extra or {})


@contextlib.contextmanager
def listening(argv: list[str], port: int, **popen: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Run `argv` until the block ends, once it accepts connections on `port`.

    Stopped with SIGTERM (then SIGKILL if it will not go) unless it has already ended.
    """
    process = subprocess.Popen(argv, cwd=REPO, **popen)
    try:
        wait_until_listening(port, process)
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[Any], timeout: float = 15) -> None:
    """End `process` with SIGTERM, or SIGKILL if it is still there after `timeout` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass(frozen=True)
class ServedProcess:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@contextlib.contextmanager
def giftgenius_http(
    store: str,
    *options: str,
    port: int | None = None,
    kill: bool = False,
    stderr: int | None = None,
    measured: bool = True,
) -> Iterator[ServedProcess]:
    """Serve GiftGenius over HTTP with `store` (`sqlite:///PATH` or `memory`) until the block ends.

    The process is stopped and awaited whatever happened: terminated (a clean shutdown), or
    killed with `kill=True`, as a crash would end it. `stderr=subprocess.PIPE` keeps what it
    says there for the test to read.
    """
    port = free_port() if port is None else port
    argv = [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--port", str(port), "--store", store]
    process = subprocess.Popen([*argv, *options], cwd=REPO, stderr=stderr, env=environment(measured=measured))
    try:
        wait_until_listening(port, process)
        yield ServedProcess(port, process)
    finally:
        if kill:
            process.kill()
        else:
            process.terminate()
        process.wait(timeout=10)


@contextlib.asynccontextmanager
async def job_store(store: str) -> AsyncIterator[JobStore]:
    """The job store the servers share, opened as another process would."""
    from herald.stores.location import open_stores

    stores = open_stores(store, app_name="giftgenius", sessions=False)
    try:
        yield stores.jobs
    finally:
        await stores.jobs.aclose()
        await stores.log.aclose()


@dataclass(frozen=True)
class RunningJob:
    worker: str | None
    #: The job's events so far, as `get_job_status` lists them.
    events: list[dict[str, Any]]


async def running_past(store: str, job_id: str, percentage: float) -> RunningJob | None:
    """The job once the store has it running past `percentage`; None if it ended first.

    Read from the store, not from a server: a busy server answers late, and a kill meant
    for a running job must not land after it ended.
    """
    async with job_store(store) as jobs:
        while True:
            job = await jobs.get(job_id)
            if job is not None and job.terminal:
                return None
            if job is not None and job.status == "running" and job.percentage >= percentage:
                events = [event.to_params() for event in await jobs.events_after(job_id)]
                return RunningJob(job.worker, events)
            await asyncio.sleep(0.005)


@dataclass
class Started:
    process: subprocess.Popen[bytes]
    stderr: Path
    port: int | None = None

    def worker_id(self) -> str:
        """The worker id the process printed when it started."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for word in self.stderr.read_text().split():
                if word.startswith("w-"):
                    return word.rstrip(":")
            time.sleep(0.05)
        raise AssertionError(f"no worker id in {self.stderr.read_text()!r}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self) -> int:
        """SIGTERM, as an operator's restart sends; waits for the process to end, returns its status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


@contextlib.contextmanager
def started(
    argv: list[str],
    log: Path,
    port: int | None = None,
    *,
    measured: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[Started]:
    """`argv` running (and listening on `port`) for the block; its stderr in `log`; `env` added."""
    with log.open("wb") as errors:
        process = subprocess.Popen(
            argv, cwd=REPO, stderr=errors, env=environment(measured=measured, extra=env)
        )
        try:
            if port is not None:
                wait_until_listening(port, process)
            yield Started(process, log, port)
        finally:
            stop(process)
