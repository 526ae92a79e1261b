"""The `herald` command as a person uses it: reports in three formats, exit statuses, and every
mistake said in a line or two with status 2, never a traceback."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import jsonschema_rs
import orjson
import pytest

from herald.lint.rules import RULES
from herald.wire.reader import RECORD_LIMIT
from herald.wire.writer import MessageLog
from tests.servers import REPO
from tests.wire.recording import HERALD, peak_resident

pytestmark = pytest.mark.slow  # the herald command, in processes of its own


def herald(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HERALD, *args],
        cwd=REPO,
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=60,
    )


def written_log(path: Path, *messages: tuple[str, object]) -> Path:
    with path.open("wb") as file:
        log = MessageLog(file)
        log.start("stdio", "test", "server", session="s1")
        for sender, message in messages:
            log.message(sender, "stdio", orjson.dumps(message), session="s1")  # type: ignore[arg-type]
        log.close()
    return path


def request(request_id: object, method: str, params: object = None) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method} | ({"params": params} if params else {})


def handshake() -> list[tuple[str, object]]:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s"}}
    return [
        ("client", request(0, "initialize", init)),
        ("server", {"jsonrpc": "2.0", "id": 0, "result": result}),
        ("client", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]


@pytest.fixture
def faulty(tmp_path: Path) -> Path:
    """One error (both result and error) and one warning (a call before the handshake ended)."""
    return written_log(
        tmp_path / "faulty.jsonl",
        *handshake()[:2],
        ("client", request(1, "tools/list")),
        (
            "server",
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}, "error": {"code": -32603, "message": "x"}},
        ),
    )


def assert_said(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    for word in words:
        assert word in result.stderr, result.stderr


def test_text_report_and_exit_status(faulty: Path) -> None:
    result = herald("lint", str(faulty))
    assert result.returncode == 1
    assert f"{faulty}:5: error jsonrpc/result-and-error" in result.stdout
    assert f"{faulty}:4: warning lifecycle/before-initialized" in result.stdout
    assert "5 records, 1 error, 1 warning" in result.stdout
    assert RULES["jsonrpc/result-and-error"].source in result.stdout


def test_fail_on_and_rule_selection(faulty: Path) -> None:
    assert herald("lint", str(faulty), "--fail-on", "never").returncode == 0
    only_warnings = herald("lint", str(faulty), "--ignore", "jsonrpc/*")
    assert only_warnings.returncode == 0
    assert "result-and-error" not in only_warnings.stdout
    assert herald("lint", str(faulty), "--ignore", "jsonrpc/*", "--fail-on", "warning").returncode == 1
    chosen = herald("lint", str(faulty), "--rule", "lifecycle/*", "--format", "json")
    assert [finding["rule"] for finding in json.loads(chosen.stdout)["findings"]] == [
        "lifecycle/before-initialized"
    ]


def test_json_report(faulty: Path) -> None:
    report = json.loads(herald("lint", str(faulty), "--format", "json").stdout)
    assert report["records"] == 5
    assert report["counts"] == {"jsonrpc/result-and-error": 1, "lifecycle/before-initialized": 1}
    assert report["summary"] == {"errors": 1, "warnings": 1}
    first = report["findings"][0]
    assert first["line"] == 4
    assert first["conversation"] == "s1"
    assert first["excerpt"].startswith('{"jsonrpc":"2.0","id":1,"method":"tools/list"')
    assert report["rules"]["jsonrpc/result-and-error"]["severity"] == "error"


def test_sarif_report_locates_findings_in_the_log(faulty: Path, tmp_path: Path) -> None:
    out = tmp_path / "lint.sarif"
    assert herald("lint", str(faulty), "--format", "sarif", "--output", str(out)).returncode == 1
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(RULES)
    by_rule = {result["ruleId"]: result for result in run["results"]}
    error = by_rule["jsonrpc/result-and-error"]
    assert error["level"] == "error"
    assert rules[error["ruleIndex"]]["id"] == "jsonrpc/result-and-error"
    assert error["locations"][0]["physicalLocation"]["region"] == {"startLine": 5}
    assert error["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == str(faulty)
    assert by_rule["lifecycle/before-initialized"]["level"] == "warning"
    assert rules[error["ruleIndex"]]["helpUri"].startswith("https://www.jsonrpc.org/")


def test_a_clean_log_and_standard_input(tmp_path: Path) -> None:
    clean = written_log(tmp_path / "clean.jsonl", *handshake())
    result = herald("lint", str(clean))
    assert result.returncode == 0
    assert "4 records, no findings" in result.stdout
    piped = herald("lint", "-", stdin=clean.read_bytes())
    assert piped.returncode == 0
    assert "<stdin>: 4 records, no findings" in piped.stdout


@pytest.mark.slow
def test_a_line_too_long_to_check_streams_past() -> None:
    """A line of 512 MiB is passed over as it comes in, with a finding at its line: the linter
    holds at most a record's worth of it (its peak is read while it still waits for input)."""
    mib = 1024 * 1024
    start = (
        b'{"v":1,"time":"2026-12-02T00:00:00.000000Z","kind":"start","from":"recorder","transport":"stdio"}\n'
    )
    process = subprocess.Popen(
        [*HERALD, "lint", "-", "--format", "json"], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert process.stdin is not None
        process.stdin.write(start)
        for _ in range(512):
            process.stdin.write(b"x" * mib)
        process.stdin.write(b'\n{"v": 9}\n')
        process.stdin.flush()
        peak = peak_resident(process)
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert peak < 100 * mib + 2 * RECORD_LIMIT, f"the linter held {peak / mib:.0f} MiB for a 512 MiB line"
    report = json.loads(out)
    found = [(finding["rule"], finding["line"]) for finding in report["findings"]]
    assert found == [("log/record-too-long", 2), ("log/unreadable-record", 3)]
    assert f"line 2 is {512 * mib:,} bytes" in report["findings"][0]["message"]
    assert report["summary"] == {"errors": 1, "warnings": 1}


def test_max_per_rule_counts_all_and_shows_some(tmp_path: Path) -> None:
    messages = [
        *handshake(),
        *(("server", {"jsonrpc": "2.0", "id": 100 + n, "result": {}}) for n in range(5)),
    ]
    log = written_log(tmp_path / "many.jsonl", *messages)
    result = herald("lint", str(log), "--max-per-rule", "2")
    assert result.stdout.count("error jsonrpc/unknown-id") == 2
    assert "5 jsonrpc/unknown-id (3 more not shown)" in result.stdout


def test_list_rules() -> None:
    result = herald("lint", "--list-rules")
    assert result.returncode == 0
    for rule in RULES.values():
        assert rule.id in result.stdout


def test_log_view_and_mermaid(tmp_path: Path) -> None:
    log = written_log(tmp_path / "clean.jsonl", *handshake(), ("client", request(1, "ping")))
    view = herald("log", "view", str(log))
    assert view.returncode == 0
    assert "client → server  #0 initialize 2025-11-25" in view.stdout
    assert "server → client  #0 result to initialize" in view.stdout
    diagram = herald("log", "view", str(log), "--mermaid")
    assert diagram.stdout.splitlines()[:3] == [
        "sequenceDiagram",
        "    participant C as Client",
        "    participant S as Server",
    ]
    assert "    C->>S: #0 initialize 2025-11-25" in diagram.stdout
    assert "    C-)S: notifications/initialized" in diagram.stdout


def test_log_schema_is_a_json_schema() -> None:
    result = herald("log", "schema")
    schema = json.loads(result.stdout)
    jsonschema_rs.meta.validate(schema)
    assert schema["properties"]["v"] == {"const": 1, "description": schema["properties"]["v"]["description"]}


# -- mistakes -----------------------------------------------------------------------------------


def test_lint_mistakes(tmp_path: Path, faulty: Path) -> None:
    assert_said(herald("lint", str(tmp_path / "nothing.jsonl")), "nothing.jsonl does not exist")
    assert_said(herald("lint", str(tmp_path)), "is a directory")
    assert_said(herald("lint"), "name the log to check")
    assert_said(herald("lint", str(faulty), "--rule", "jsonrpc/id-reuse"), "did you mean jsonrpc/id-reused")
    assert_said(herald("lint", str(faulty), "--format", "xml"), "Invalid value for '--format'")
    assert_said(herald("lint", str(faulty), "--output", str(tmp_path / "no" / "x.sarif")), "does not exist")


def test_view_mistakes(tmp_path: Path) -> None:
    log = written_log(tmp_path / "clean.jsonl", *handshake())
    assert_said(herald("log", "view", str(tmp_path / "gone.jsonl")), "does not exist")
    assert_said(herald("log", "view", str(log), "--mermaid", "--session", "s9"), "no conversation 's9'", "s1")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert_said(herald("log", "view", str(empty), "--mermaid"), "has no messages to draw")


def test_record_mistakes(tmp_path: Path) -> None:
    assert_said(herald("record"), "nothing to record")
    assert_said(herald("record", "--upstream", "http://127.0.0.1:1/mcp", "--", "cat"), "not both")
    assert_said(herald("record", "--upstream", "127.0.0.1:8000/mcp"), "is not an http:// or https:// URL")
    assert_said(herald("record", "-o", str(tmp_path / "no" / "x.jsonl"), "--", "cat"), "does not exist")
    missing = herald("record", "-o", str(tmp_path / "w.jsonl"), "--", "no-such-server-command")
    assert_said(missing, "cannot start 'no-such-server-command'")
    assert not (tmp_path / "w.jsonl").exists(), "a server that never started leaves no log"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = herald(
            "record",
            "--upstream",
            "http://127.0.0.1:1/mcp",
            "--port",
            str(port),
            "-o",
            str(tmp_path / "h.jsonl"),
        )
    assert_said(busy, f"port {port} is in use")
    assert_said(herald("recrod"), "No such command 'recrod'")
