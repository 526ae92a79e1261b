"""Listens that never read cost a real server a bounded amount of memory each.

A herald server process runs jobs that report progress two hundred times each (as a bulk
analysis used to, before it spaced its reports in time) while 2026-07-28 listens name
them and never read a byte of their streams. What the server holds for each (the frames it has not written,
what waits to become frames, the socket's buffer) is bounded, and its resident memory
shows it: growth per listen stays under `MAX_GROWTH_PER_LISTEN`, where buffers bound only
in frames grew twice that. Afterwards every listen's stream has ended, or its connection
was dropped.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from herald.testing import free_port, wait_until_listening
from tests.modern import META, headers_for, structured
from tests.servers import REPO, ServedProcess, environment

CHATTY = """
import asyncio, sys
from herald import Server
from herald.runtime import JobContext
from herald.stores.sqlite import SqliteJobStore
from herald.transports.http import run_http

server = Server("chatty", max_jobs_per_owner=None, max_waiting_jobs=None)
server.use_job_store(SqliteJobStore(sys.argv[1]))

@server.job()
async def chatty(reports: int, ctx: JobContext) -> dict:
    \"\"\"Reports `reports` times, each with a stage some 250 characters long.\"\"\"
    for step in range(1, reports + 1):
        await ctx.report_progress(100 * step / reports, f"step {step} " + "of a long stage name " * 12)
        await asyncio.sleep(0)
    return {"reports": reports}

run_http(server, port=int(sys.argv[2]))
"""

#: Listens that never read, each naming every job.
LISTENS = 50
#: Jobs of `REPORTS` reports, 203 events each: some 20,000 events, 7 MB of frames, for each
#: listen, more than the kernel takes into a socket's send buffer (4 MiB at most here).
JOBS = 100
REPORTS = 200
#: A generous bound: what one stalled listen may hold (256 KiB of frames, 256 messages, the
#: socket's buffer, its replay's reads) came to about 1 MiB of resident memory here, with
#: the allocator's share. With buffers bound in frames only, each held over 4 MiB.
MAX_GROWTH_PER_LISTEN = 2 * 1024 * 1024
#: A listener that reads nothing is cut off 10 s after its frames fill up; some slack.
CUT_OFF_WITHIN = 15.0
ENDED = ("completed", "failed")


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc")


def open_listen(served: ServedProcess, job_ids: list[str]) -> socket.socket:
    """A listen on a socket that reads nothing, with a small receive buffer so the
    kernel holds little on the server's behalf."""
    params = {"notifications": {"io.herald/jobEvents": {"jobIds": job_ids}}, "_meta": META}
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params})
    head = {**headers_for("subscriptions/listen"), "content-type": "application/json"}
    head |= {"host": f"127.0.0.1:{served.port}", "content-length": str(len(body))}
    request = b"POST /mcp HTTP/1.1\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in head.items())
    listen = socket.socket()
    listen.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listen.connect(("127.0.0.1", served.port))
    listen.sendall(request + b"\r\n" + body)
    return listen


def read_to_the_end(listen: socket.socket, deadline: float) -> None:
    """Read until the server ends the response or drops the connection; a timeout fails."""
    received = b""
    while not received.endswith(b"0\r\n\r\n"):  # the last chunk of a chunked response
        listen.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            chunk = listen.recv(1 << 20)
        except ConnectionResetError:  # cut off below HTTP: the server dropped the connection
            return
        if not chunk:
            return
        received = received[-5:] + chunk


@contextlib.contextmanager
def chatty_http(store: Path) -> Iterator[ServedProcess]:
    port = free_port()
    # Untraced by coverage (its memory is what is measured, and its work is measured elsewhere).
    command = [sys.executable, "-c", CHATTY, str(store), str(port)]
    process = subprocess.Popen(command, cwd=REPO, env=environment(measured=False))
    try:
        wait_until_listening(port, process)
        yield ServedProcess(port, process)
    finally:
        process.terminate()
        process.wait(timeout=10)


def start_jobs(served: ServedProcess, count: int) -> list[str]:
    arguments = {"reports": REPORTS}
    return [structured(served.url, "chatty", arguments)["jobId"] for _ in range(count)]


def wait_until_ended(served: ServedProcess, job_ids: list[str]) -> None:
    deadline = time.monotonic() + 120
    for job_id in job_ids:
        while structured(served.url, "get_job_status", {"jobId": job_id})["status"] not in ENDED:
            assert time.monotonic() < deadline, "the jobs did not end"
            time.sleep(0.1)


@pytest.mark.slow
def test_listens_that_never_read_hold_a_bounded_amount_each(tmp_path: Path) -> None:
    with chatty_http(tmp_path / "store.db") as served:
        wait_until_ended(served, start_jobs(served, 1))  # warm-up: the job machinery is loaded
        before = resident_bytes(served.process.pid)
        job_ids = start_jobs(served, JOBS)
        listens = [open_listen(served, job_ids) for _ in range(LISTENS)]  # while the jobs run
        try:
            wait_until_ended(served, job_ids)
            # Every listen has been handed all it asked for, or was cut off, within the
            # window: the server's memory is watched through it.
            peak = before
            window_ends = time.monotonic() + CUT_OFF_WITHIN
            while time.monotonic() < window_ends:
                peak = max(peak, resident_bytes(served.process.pid))
                time.sleep(0.2)
            growth = (peak - before) / LISTENS
            assert growth < MAX_GROWTH_PER_LISTEN, f"{growth / 1024:.0f} KiB per stalled listen"
            deadline = time.monotonic() + CUT_OFF_WITHIN
            for listen in listens:  # and none is left open for ever
                read_to_the_end(listen, deadline)
        finally:
            for listen in listens:
                listen.close()
