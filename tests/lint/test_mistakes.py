"""Each classic mistake, made by a real process and recorded through a real `herald record`, trips
exactly its rule, through the stdio proxy and through the HTTP proxy; without a mistake the
same conversation lints clean."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from herald.lint import Finding, lint_file
from tests.wire.mistakes import CLIENT_MISTAKES, EXPECTED, drive
from tests.wire.recording import (
    MISTAKES,
    HttpLineClient,
    mistakes_over_http,
    recorded_http,
    recorded_stdio,
    valid_records,
)

pytestmark = pytest.mark.slow  # the recorders between real processes

CASES = [None, *sorted(EXPECTED)]


def rules_found(log: Path) -> set[str]:
    findings: list[Finding] = []
    lint_file(log, findings.append)
    return {finding.rule_id for finding in findings}


def expected(mistake: str | None) -> set[str]:
    return set() if mistake is None else {EXPECTED[mistake]}


@pytest.mark.parametrize("mistake", CASES, ids=lambda mistake: mistake or "clean")
def test_through_the_stdio_recorder(tmp_path: Path, mistake: str | None) -> None:
    log = tmp_path / "wire.jsonl"
    server_mistake = mistake if mistake not in CLIENT_MISTAKES else None
    command = [sys.executable, str(MISTAKES), *(["--mistake", server_mistake] if server_mistake else [])]
    with recorded_stdio(log, command) as client:
        drive(client.send, mistake)
    records = valid_records(log)
    assert [record["kind"] for record in records][:1] == ["start"]
    assert records[-1]["kind"] == "end"
    assert rules_found(log) == expected(mistake)


@pytest.mark.parametrize("mistake", CASES, ids=lambda mistake: mistake or "clean")
def test_through_the_http_recorder(tmp_path: Path, mistake: str | None) -> None:
    log = tmp_path / "wire.jsonl"
    server_mistake = mistake if mistake not in CLIENT_MISTAKES else None
    with mistakes_over_http(server_mistake) as upstream, recorded_http(log, upstream) as url:
        drive(HttpLineClient(url).send, mistake)
    valid_records(log)
    assert rules_found(log) == expected(mistake)
