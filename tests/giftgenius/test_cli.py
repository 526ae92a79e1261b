"""The `giftgenius` command as a user runs it: a real server process behind `call`."""

from __future__ import annotations

import subprocess
import sys

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
