"""The syslog severities MCP uses for `notifications/message`, in increasing order."""

from __future__ import annotations

from typing import Final, Literal

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

SEVERITY: Final[dict[str, int]] = {
    "debug": 0,
    "info": 1,
    "notice": 2,
    "warning": 3,
    "error": 4,
    "critical": 5,
    "alert": 6,
    "emergency": 7,
}


def passes(level: str, threshold: str | None) -> bool:
    """Whether a message at `level` goes out when the client asked for `threshold`."""
    return threshold is not None and SEVERITY[level] >= SEVERITY[threshold]
