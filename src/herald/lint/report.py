"""Saying what the linter found: text for people, JSON for programs, SARIF for CI annotations.

Each report is written as findings arrive, so a long log is never held in memory; past
`max_per_rule` findings of one rule only the count goes on (a log where every line breaks
the same rule says so in its summary, not in a million lines).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any, Final

import orjson
from rich.console import Console
from rich.markup import escape

from herald.lint.findings import Finding
from herald.lint.rules import RULES

SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL: Final = {"error": "error", "warning": "warning", "note": "note"}
_STYLE: Final = {"error": "bold red", "warning": "yellow", "note": "cyan"}


@dataclass
class Tally:
    """Findings per rule, and how many were shown."""

    max_per_rule: int
    found: Counter[str] = field(default_factory=Counter)

    def count(self, finding: Finding) -> bool:
        """Count `finding`; whether it is still to be shown."""
        self.found[finding.rule_id] += 1
        return self.max_per_rule <= 0 or self.found[finding.rule_id] <= self.max_per_rule

    def by_severity(self, severity: str) -> int:
        return sum(count for rule, count in self.found.items() if RULES[rule].severity == severity)


class Report:
    """Base: `add` each finding, then `close` with how many records were read."""

    def __init__(self, out: IO[str], log_name: str, max_per_rule: int) -> None:
        self.out = out
        self.log_name = log_name
        self.tally = Tally(max_per_rule)

    def add(self, finding: Finding) -> None:
        if self.tally.count(finding):
            self.show(finding)

    def show(self, finding: Finding) -> None:
        raise NotImplementedError

    def close(self, records: int) -> None:
        raise NotImplementedError


class TextReport(Report):
    def __init__(self, out: IO[str], log_name: str, max_per_rule: int, *, color: bool | None = None) -> None:
        super().__init__(out, log_name, max_per_rule)
        self.console = Console(
            file=out, force_terminal=color, no_color=color is False, highlight=False, width=200
        )

    def show(self, finding: Finding) -> None:
        severity = finding.severity
        where = f"{self.log_name}:{finding.line}"
        self.console.print(
            f"{escape(where)}: [{_STYLE[severity]}]{severity}[/] "
            f"[bold]{finding.rule_id}[/]: {escape(finding.message)}"
        )
        if finding.excerpt:
            self.console.print(f"    [dim]{escape(finding.excerpt)}[/]")

    def close(self, records: int) -> None:
        found = self.tally.found
        if not found:
            self.console.print(f"{escape(self.log_name)}: {records} records, no findings")
            return
        self.console.print()
        for rule_id, count in sorted(found.items()):
            rule = RULES[rule_id]
            hidden = count - self.tally.max_per_rule if 0 < self.tally.max_per_rule < count else 0
            more = f" ({hidden} more not shown)" if hidden else ""
            self.console.print(
                f"  [{_STYLE[rule.severity]}]{count:>6}[/] [bold]{rule_id}[/]{more}: {escape(rule.summary)}"
            )
            self.console.print(f"         [dim]{escape(rule.source)}[/]")
        errors, warnings = self.tally.by_severity("error"), self.tally.by_severity("warning")
        notes = self.tally.by_severity("note")
        self.console.print(
            f"{escape(self.log_name)}: {records} records, {_plural(errors, 'error')}, "
            f"{_plural(warnings, 'warning')}" + (f", {_plural(notes, 'note')}" if notes else "")
        )


class JsonReport(Report):
    """`{"log", "records", "findings": [...], "counts": {rule: n}, "rules": {rule: {...}}}`."""

    def __init__(self, out: IO[str], log_name: str, max_per_rule: int) -> None:
        super().__init__(out, log_name, max_per_rule)
        self.out.write('{"log":' + _json(log_name) + ',"findings":[')
        self._first = True

    def show(self, finding: Finding) -> None:
        item = {
            "rule": finding.rule_id,
            "severity": finding.severity,
            "line": finding.line,
            "message": finding.message,
            "excerpt": finding.excerpt,
            "conversation": finding.conversation,
            "time": finding.time,
        }
        self.out.write(("" if self._first else ",") + _json(item))
        self._first = False

    def close(self, records: int) -> None:
        found = self.tally.found
        rules = {
            rule_id: {
                "severity": RULES[rule_id].severity,
                "summary": RULES[rule_id].summary,
                "source": RULES[rule_id].source,
            }
            for rule_id in sorted(found)
        }
        summary = {"errors": self.tally.by_severity("error"), "warnings": self.tally.by_severity("warning")}
        self.out.write(
            '],"records":'
            + _json(records)
            + ',"counts":'
            + _json(dict(sorted(found.items())))
            + ',"summary":'
            + _json(summary)
            + ',"rules":'
            + _json(rules)
            + "}\n"
        )


class SarifReport(Report):
    """SARIF 2.1.0: one run of the tool `herald lint`, results located at lines of the log."""

    def __init__(self, out: IO[str], log_name: str, max_per_rule: int, *, version: str) -> None:
        super().__init__(out, log_name, max_per_rule)
        self.version = version
        self._ids = {rule_id: index for index, rule_id in enumerate(RULES)}
        self.out.write('{"$schema":' + _json(SARIF_SCHEMA) + ',"version":"2.1.0","runs":[{"results":[')
        self._first = True

    def show(self, finding: Finding) -> None:
        result: dict[str, Any] = {
            "ruleId": finding.rule_id,
            "ruleIndex": self._ids[finding.rule_id],
            "level": _SARIF_LEVEL[finding.severity],
            "message": {"text": finding.message + (f"\n{finding.excerpt}" if finding.excerpt else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": self.log_name},
                        "region": {"startLine": finding.line},
                    }
                }
            ],
        }
        if finding.conversation is not None:
            result["properties"] = {"conversation": finding.conversation}
        self.out.write(("" if self._first else ",") + _json(result))
        self._first = False

    def close(self, records: int) -> None:
        rules = []
        for rule in RULES.values():
            entry: dict[str, Any] = {
                "id": rule.id,
                "shortDescription": {"text": rule.summary},
                "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
                "properties": {"source": rule.source},
            }
            if rule.source.startswith("https://"):
                entry["helpUri"] = rule.source
            rules.append(entry)
        driver = {
            "name": "herald lint",
            "version": self.version,
            "informationUri": "https://modelcontextprotocol.io/specification",
            "rules": rules,
        }
        self.out.write(
            '],"tool":{"driver":'
            + _json(driver)
            + '},"artifacts":[{"location":{"uri":'
            + _json(self.log_name)
            + '}}],"properties":{"records":'
            + _json(records)
            + "}}]}\n"
        )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")
