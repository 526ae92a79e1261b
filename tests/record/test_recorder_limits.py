"""The recorders hold a bounded amount whatever passes through them, and lose no message they can keep.

Each memory test sends far more than the bound through the real `herald record` and reads
the recorder's peak resident memory (Linux's VmHWM) while it still runs: a body, an event
or a backlog held whole shows as hundreds of MiB. A recorder keeps at most one message of
`MESSAGE_KEEP_BYTES` whole, so the bound is the interpreter and that, with room to spare.
"""

from __future__ import annotations

import base64
import contextlib
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

from herald.testing import free_port
from herald.wire.format import MESSAGE_KEEP_BYTES
from tests.servers import REPO, listening
from tests.wire.heavy import BROKEN_CHUNK, DATA_LINE, SMALL_EVENT
from tests.wire.recording import HERALD, LIMIT, peak_resident, recorded_http, recording_proxy, valid_records

MIB = 1024 * 1024
HEAVY = Path(__file__).parents[1] / "wire" / "heavy.py"
#: A recorder's peak while far more than one message passes: its libraries and one message kept whole.
PEAK_BOUND = 100 * MIB + 3 * MESSAGE_KEEP_BYTES


@contextlib.contextmanager
def heavy_upstream() -> Iterator[str]:
    """`tests/wire/heavy.py` on a free port; yields its origin."""
    port = free_port()
    with listening([sys.executable, str(HEAVY), "--port", str(port)], port):
        yield f"http://127.0.0.1:{port}/"


# -- HTTP -----------------------------------------------------------------------------------------


def _request_body(size: int) -> Iterator[bytes]:
    """A JSON-RPC request of exactly `size` bytes, most of it one string, in pieces of a MiB."""
    start, end = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"pad":"', b'"}}'
    yield start
    left = size - len(start) - len(end)
    while left > 0:
        piece = min(left, MIB)
        yield b"x" * piece
        left -= piece
    yield end


@pytest.mark.slow
def test_a_large_post_goes_upstream_as_it_arrives(tmp_path: Path) -> None:
    size = 320 * MIB
    log = tmp_path / "wire.jsonl"
    with heavy_upstream() as upstream, recording_proxy(log, upstream) as (url, recorder):
        headers = {"content-type": "application/json", "content-length": str(size)}
        answer = httpx.post(url + "sink", content=_request_body(size), headers=headers, timeout=120)
        peak = peak_resident(recorder)
    assert answer.json()["result"]["received"] == size, "the whole body reached the server"
    assert peak < PEAK_BOUND, f"the recorder held {peak / MIB:.0f} MiB for a {size // MIB} MiB body"
    request = next(record for record in valid_records(log) if record["from"] == "client")
    assert request["kind"] == "unparsed"
    assert request["size"] == size
    assert request["raw"].startswith('{"jsonrpc":"2.0","id":1,"method":"tools/call"')
    assert request["http"]["method"] == "POST", "the request line is kept with what is kept of its body"


@pytest.mark.slow
def test_a_long_event_is_passed_on_and_not_held(tmp_path: Path) -> None:
    mib = 384
    log = tmp_path / "wire.jsonl"
    with heavy_upstream() as upstream, recording_proxy(log, upstream) as (url, recorder):
        received = 0
        with httpx.stream("GET", url + f"long-event?mib={mib}", timeout=120) as response:
            for chunk in response.iter_raw():
                received += len(chunk)
        peak = peak_resident(recorder)
    assert received == len(b"id: 1\n") + mib * 16 * len(DATA_LINE) + len(b"\n" + SMALL_EVENT)
    assert peak < PEAK_BOUND, f"the recorder held {peak / MIB:.0f} MiB for a {mib} MiB event"
    events = [record for record in valid_records(log) if record["from"] == "server" and "eventId" in record]
    assert [record["kind"] for record in events] == ["unparsed", "message"]
    assert events[0]["size"] == len(b"id: 1") + mib * 16 * (len(DATA_LINE) - 1), (
        "logged as its start and size"
    )
    assert events[1]["message"]["params"]["data"] == "after", "the event after it is read as before"


def test_an_event_after_one_that_is_not_utf8_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    with heavy_upstream() as upstream, recorded_http(log, upstream) as url:
        assert httpx.get(url + "broken", timeout=LIMIT).content == BROKEN_CHUNK
    events = [record for record in valid_records(log) if record["from"] == "server" and "eventId" in record]
    assert [(record["kind"], record["eventId"]) for record in events] == [("unparsed", "1"), ("message", "2")]
    assert b"\xff" in base64.b64decode(events[0]["rawBase64"]), "the bytes that are not UTF-8 are kept"
    assert events[1]["message"]["params"]["data"] == "after"


# -- stdio ----------------------------------------------------------------------------------------

#: A server that writes `TOTAL_MIB` lines of a MiB and says on stderr how many it has written.
TOTAL_MIB = 256
WRITER = f"""
import sys
line = b'"' + b"x" * ({MIB} - 3) + b'"\\n'
for written in range(1, {TOTAL_MIB} + 1):
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    print(written, file=sys.stderr, flush=True)
"""
#: How far the server may run ahead of a host that reads nothing: the pipes' and the recorder's buffers.
AHEAD_BOUND_MIB = 32
#: How long the host reads nothing. A recorder without back-pressure lets the server run ahead at
#: once (within a tenth of a second here); one with it holds the server back for as long as this.
WATCH_SECONDS = 3.0


@pytest.mark.slow
def test_a_host_that_stops_reading_holds_the_server_back(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*HERALD, "record", "-o", str(tmp_path / "wire.jsonl"), "--", sys.executable, "-c", WRITER],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        assert process.stderr is not None
        ahead = _written_while_unread(process.stderr, AHEAD_BOUND_MIB, WATCH_SECONDS)
        peak = peak_resident(process)
        assert ahead <= AHEAD_BOUND_MIB, f"the server got {ahead} MiB (and on) ahead of a host that read none"
        assert peak < PEAK_BOUND, f"the recorder held {peak / MIB:.0f} MiB"
        received = 0
        while chunk := process.stdout.read(MIB):  # the host reads again: everything comes
            received += len(chunk)
        assert received == TOTAL_MIB * MIB
        assert process.wait(timeout=LIMIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _written_while_unread(stderr: IO[bytes], bound: int, seconds: float) -> int:
    """The MiB the server says it has written within `seconds` (or as soon as that passes `bound`)."""
    deadline = time.monotonic() + seconds
    written, pending = 0, b""
    with selectors.DefaultSelector() as selector:
        selector.register(stderr, selectors.EVENT_READ)
        while written <= bound and (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            chunk = os.read(stderr.fileno(), 65536)  # not through a buffer the selector cannot see
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            counts = [int(line) for line in lines if line.isdigit()]  # the recorder says a line first
            if counts:
                written = counts[-1]
    return written
