"""The `giftgenius` command as a user runs it: a real server process behind `call`."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson

from giftgenius.cli import parse_arguments

CALL = [sys.executable, "-m", "giftgenius", "call", "suggest_gifts"]
ARGS = [
    "--arg",
    "occasion=birthday",
    "--arg",
    "budget=100",
    "--arg",
    "recipient=friend who loves board games",
]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CALL, *argv], capture_output=True, text=True, timeout=60, check=False)


def test_call_prints_suggestions() -> None:
    done = run(*ARGS)
    assert done.returncode == 0, done.stderr
    assert "1. " in done.stdout
    assert "Board Game" in done.stdout.splitlines()[0]
    assert done.stderr == ""


def test_call_json_output_is_the_result() -> None:
    done = run(*ARGS, "--json")
    result = orjson.loads(done.stdout)
    assert all(gift["price"] <= 100 for gift in result["structuredContent"]["gifts"])


def test_show_wire_prints_each_frame_with_direction() -> None:
    done = run(*ARGS, "--show-wire")
    assert done.returncode == 0
    wire = done.stderr
    assert wire.count("→ client to server") == 4  # initialize, initialized, tools/list, tools/call
    assert wire.count("← server to client") == 3
    assert '"method": "initialize"' in wire
    assert '"method": "notifications/initialized"' in wire
    assert '"jsonrpc": "2.0"' in wire


def test_modern_era_needs_no_handshake() -> None:
    done = run(*ARGS, "--show-wire", "--modern")
    assert done.returncode == 0
    assert '"method": "initialize"' not in done.stderr
    assert '"method": "server/discover"' in done.stderr
    assert '"resultType": "complete"' in done.stderr


def test_business_error_exits_1() -> None:
    done = run("--arg", "occasion=birthday", "--arg", "budget=1", "--arg", "recipient=anyone")
    assert done.returncode == 1
    assert "cheapest option" in done.stdout


def test_unknown_tool_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "giftgenius", "call", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown tool 'nope'" in done.stdout


def test_arguments_follow_the_schema_types() -> None:
    schema = {
        "properties": {
            "budget": {"type": "number"},
            "recipient": {"type": "string"},
            "n": {"type": "integer"},
        }
    }
    assert parse_arguments(["budget=100", "recipient=42", "n=3"], schema) == {
        "budget": 100,
        "recipient": "42",
        "n": 3,
    }


def test_serve_http_prints_where_and_answers(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = tmp_path / "events.db"
    argv = [sys.executable, "-m", "giftgenius", "serve", "--port", str(port), "--store", f"sqlite:///{store}"]
    server = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        assert f"http://127.0.0.1:{port}/mcp" in banner
        assert str(store) in server.stderr.readline()
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/mcp",
                    json=body,
                    headers={"accept": "application/json, text/event-stream"},
                    timeout=5,
                )
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        assert response.status_code == 200
        assert response.json()["result"]["serverInfo"]["name"] == "giftgenius"
        assert "mcp-session-id" in response.headers
        assert store.exists()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_cli_states_herald_s_default_lease() -> None:
    from giftgenius import cli
    from herald.runtime import runner

    assert cli.DEFAULT_LEASE_SECONDS == runner.DEFAULT_LEASE_SECONDS
