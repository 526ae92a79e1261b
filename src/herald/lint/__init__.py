"""`herald lint`: check a message log against the rules of MCP, JSON-RPC and herald's job events.

    from herald.lint import lint_file
    findings = []
    records = lint_file("session.jsonl", findings.append)

A log is read once, front to back, in memory that does not grow with its length
(`herald.lint.engine` says how), nor with the length of a line: one longer than any
record a recorder writes is passed over as it streams by (`herald.wire.reader`). Each
`Finding` names its rule, the line of the log, what is wrong, and the message it is
wrong in; `herald.lint.rules.RULES` lists them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import IO

from herald.lint.engine import Linter
from herald.lint.findings import Finding
from herald.lint.rules import RULES, Rule, UnknownRule, select
from herald.wire.reader import LongLine, line_batches

__all__ = ["Finding", "Linter", "Rule", "UnknownRule", "lint_file", "lint_lines", "lint_stream", "select"]


def lint_lines(
    lines: Iterable[bytes], on_finding: Callable[[Finding], None], rules: frozenset[str] = frozenset(RULES)
) -> int:
    """Lint the log's lines in order; returns how many records were read. Blank lines are skipped."""
    linter = Linter(on_finding, rules)
    for number, line in enumerate(lines, 1):
        if not line.isspace():
            linter.feed(line, number)
    linter.finish()
    return linter.records


def lint_stream(
    stream: IO[bytes], on_finding: Callable[[Finding], None], rules: frozenset[str] = frozenset(RULES)
) -> int:
    """Lint the log read from `stream`; returns how many records were read.

    A line too long to be a record is passed over unread, with a `log/record-too-long` finding.
    """
    linter = Linter(on_finding, rules)
    number = 0
    for batch in line_batches(stream):
        if isinstance(batch, LongLine):
            number += 1
            linter.too_long(number, batch.size)
            continue
        for line in batch:
            number += 1
            if line and not line.isspace():
                linter.feed(line, number)
    linter.finish()
    return linter.records


def lint_file(
    path: str | os.PathLike[str],
    on_finding: Callable[[Finding], None],
    rules: frozenset[str] = frozenset(RULES),
) -> int:
    """Lint the log at `path`; returns how many records were read."""
    with open(path, "rb") as log:
        return lint_stream(log, on_finding, rules)
