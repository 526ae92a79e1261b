"""The recorders are transparent: what passes through them is what would pass without them.

HTTP: an event stream arrives while the server is still holding it open (nothing is
buffered), `Last-Event-ID` resumes through the proxy, a client that leaves releases the
server's stream, and a server that cannot be reached is a 502 that says so. stdio: bytes
arrive as they were sent, the server's exit status and stderr come through, and a
SIGTERM reaches the server.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from herald.lint import Finding, lint_file
from tests.client.conftest import HttpServer, gate, http_server
from tests.messages import INITIALIZE, POST_HEADERS
from tests.servers import REPO
from tests.wire.recording import HERALD, LIMIT, recorded_http, valid_records

pytestmark = pytest.mark.slow  # the recorders between real processes

__all__ = ["http_server"]  # the fixture, shared with the client tests


def lint_clean(log: Path) -> None:
    found: list[Finding] = []
    lint_file(log, found.append)
    assert found == []


async def test_an_event_stream_passes_as_it_is_written(http_server: HttpServer, tmp_path: Path) -> None:
    """The job reports 25 % and then waits: that event must reach the client while it waits."""
    log = tmp_path / "wire.jsonl"
    with recorded_http(log, http_server.url) as url:
        async with httpx.AsyncClient(timeout=LIMIT) as http, asyncio.timeout(LIMIT):
            headers, stream_headers = await _session(http, url)
            heard: list[str] = []
            opened = asyncio.Event()
            listening = asyncio.ensure_future(
                _event_ids(http, url, stream_headers, heard, until="job.completed", opened=opened)
            )
            await opened.wait()  # the stream is attached upstream: the job's events will come on it
            await _start_gated(http, url, headers, "held")
            while not heard:  # noqa: ASYNC110  # the reader appends as events arrive
                await asyncio.sleep(0.01)
            assert not gate("held").is_set(), "the event came while its job was held and its stream open"
            gate("held").set()
            assert len(await listening) >= 3
    streamed = [
        record["message"]["params"]
        for record in valid_records(log)
        if record.get("stream", "").startswith("get-") and "eventId" in record
    ]
    assert [event.get("percentage") for event in streamed if event["type"] == "job.progress"][:1] == [25]
    lint_clean(log)


async def _session(http: httpx.AsyncClient, url: str) -> tuple[dict[str, str], dict[str, str]]:
    """Initialize a session: the headers of its POSTs, and of its GET stream."""
    opened = await http.post(url, json=INITIALIZE, headers=POST_HEADERS)
    session = opened.headers["mcp-session-id"]
    headers = POST_HEADERS | {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    stream = {"accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    return headers, stream


async def _start_gated(http: httpx.AsyncClient, url: str, headers: dict[str, str], name: str) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "gated", "arguments": {"name": name}},
    }
    assert (await http.post(url, json=call, headers=headers)).status_code == 200


async def test_last_event_id_resumes_through_the_recorder(http_server: HttpServer, tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    with recorded_http(log, http_server.url) as url:
        async with httpx.AsyncClient(timeout=LIMIT) as http, asyncio.timeout(LIMIT):
            headers, stream_headers = await _session(http, url)
            opened = asyncio.Event()
            listening = asyncio.ensure_future(
                _event_ids(http, url, stream_headers, [], until="job.completed", opened=opened)
            )
            await opened.wait()
            await _start_gated(http, url, headers, "resume")
            gate("resume").set()
            first = await listening
            assert len(first) >= 3
            again = await _event_ids(
                http, url, stream_headers | {"last-event-id": first[0]}, [], until="job.completed"
            )
            assert again == first[1:], "the replay starts right after the id the client names"
    gets = [r for r in valid_records(log) if r["kind"] == "http" and r["http"].get("method") == "GET"]
    assert gets[-1]["http"]["headers"]["last-event-id"] == first[0]
    lint_clean(log)


async def _event_ids(
    http: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    ids: list[str],
    *,
    until: str,
    opened: asyncio.Event | None = None,
) -> list[str]:
    """The ids of the job events a GET stream brings, appended to `ids`, up to one of type `until`."""
    async with http.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        if opened is not None:
            opened.set()
        event_id = None
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line.removeprefix("id:").strip()
            elif line.startswith("data:") and line.removeprefix("data:").strip():
                ids.append(str(event_id))
                if json.loads(line.removeprefix("data:"))["params"]["type"] == until:
                    break
    return ids


async def test_a_client_that_leaves_releases_the_servers_stream(
    http_server: HttpServer, tmp_path: Path
) -> None:
    log = tmp_path / "wire.jsonl"
    with recorded_http(log, http_server.url) as url:
        async with httpx.AsyncClient(timeout=LIMIT) as http, asyncio.timeout(LIMIT):
            session = (await http.post(url, json=INITIALIZE, headers=POST_HEADERS)).headers["mcp-session-id"]
            headers = {
                "accept": "text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25",
            }
            async with http.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200
            # The server allows one GET stream per session: a second is refused (409) for as
            # long as the first is held open upstream. Once the proxy lets go, it is accepted.
            while True:
                async with http.stream("GET", url, headers=headers) as response:
                    if response.status_code == 200:
                        break
                    assert response.status_code == 409
                await asyncio.sleep(0.05)
    ends = [r for r in valid_records(log) if r["kind"] == "end" and r["stream"].startswith("get-")]
    assert ends
    assert ends[0]["reason"] == "client left"


def test_an_unreachable_server_is_a_502_that_says_so(tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    with recorded_http(log, "http://127.0.0.1:9/mcp") as url:
        answered = httpx.post(url, json=INITIALIZE, headers=POST_HEADERS, timeout=LIMIT)
    assert answered.status_code == 502
    assert "the upstream server http://127.0.0.1:9 cannot be reached" in answered.text
    statuses = [r["http"].get("status") for r in valid_records(log) if r["kind"] == "http"]
    assert statuses == [502]


# -- stdio --------------------------------------------------------------------------------------


def record(log: Path, *command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*HERALD, "record", "-o", str(log), "--", *command],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        timeout=LIMIT,
    )


def test_bytes_pass_through_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    sent = (
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n  {"a": "\xc3\xa9"}\r\nnot json\n\n{"last": "no newline"}'
    )
    result = record(log, "cat", stdin=sent)
    assert result.returncode == 0
    assert result.stdout == sent
    records = valid_records(log)
    by_sender = {
        sender: [
            r.get("message", r.get("raw")) for r in records if r.get("from") == sender and r["kind"] != "end"
        ]
        for sender in ("client", "server")
    }
    expected = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"a": "é"}, "not json", {"last": "no newline"}]
    assert by_sender["client"] == by_sender["server"] == expected
    assert [r["reason"] for r in records if r["kind"] == "end"][-1] == "exit 0"


def test_the_servers_status_and_stderr_come_through(tmp_path: Path) -> None:
    result = record(
        tmp_path / "wire.jsonl",
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('from the server'); sys.exit(3)",
    )
    assert result.returncode == 3
    assert b"from the server" in result.stderr
    killed = record(
        tmp_path / "killed.jsonl",
        sys.executable,
        "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    )
    assert killed.returncode == 128 + signal.SIGKILL


def test_sigterm_reaches_the_server(tmp_path: Path) -> None:
    server = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    print('terminated', file=sys.stderr, flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen(
        [*HERALD, "record", "-o", str(tmp_path / "wire.jsonl"), "--", sys.executable, "-c", server],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0
    assert b"terminated" in stderr
