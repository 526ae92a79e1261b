"""What the linter found: a rule broken at a line of the log, said in words, with the message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from herald.lint.rules import RULES, Rule

#: How much of the offending message a finding quotes.
EXCERPT_CHARS: Final = 240


@dataclass(frozen=True, slots=True)
class Finding:
    rule_id: str
    #: The line of the log (1-based) where it shows.
    line: int
    message: str
    #: The offending message, compact and cut to `EXCERPT_CHARS`.
    excerpt: str | None = None
    #: The session (or HTTP exchange) it happened in.
    conversation: str | None = None
    time: str | None = None

    @property
    def rule(self) -> Rule:
        return RULES[self.rule_id]

    @property
    def severity(self) -> str:
        return self.rule.severity


def excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"
