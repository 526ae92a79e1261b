"""What the linter keeps of one conversation: a stdio connection, an HTTP session, or (in the
2026-07-28 era over HTTP) one exchange.

A conversation is where ids are paired and the handshake is followed: its era and
version as the log shows them, the capabilities each side declared, the requests in
flight in each direction, the progress tokens they gave, and bounded memories of what
already happened (ids used, requests answered or cancelled, SSE event ids).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

from herald.lint.bounded import Recent

#: How many ids, answers and event ids a conversation remembers (see `Recent`).
MEMORY: Final = 65_536

Key = tuple[str, Any]  # (the requester, the request id)


class Phase(enum.IntEnum):
    """How far the handshake has come (handshake era only)."""

    NEW = 0  # nothing yet
    INITIALIZING = 1  # `initialize` sent, not answered
    ANSWERED = 2  # `initialize` answered, `notifications/initialized` not sent
    READY = 3  # `notifications/initialized` sent


class Era(enum.Enum):
    HANDSHAKE = "handshake"
    MODERN = "modern"


@dataclass(slots=True)
class Pending:
    """A request in flight."""

    method: str
    line: int
    stream: str | None
    #: tools/call: the tool and its arguments.
    tool: str | None = None
    arguments: Any = None
    token: Any = None
    task: bool = False


@dataclass(slots=True)
class Conversation:
    name: str
    #: Whether the log shows its beginning (so "initialize came first" can be judged).
    from_start: bool = False
    era: Era | None = None
    version: str | None = None
    phase: Phase = Phase.NEW
    client_capabilities: dict[str, Any] | None = None
    server_capabilities: dict[str, Any] | None = None
    pending: dict[Key, Pending] = field(default_factory=dict)
    used: Recent[Key, None] = field(default_factory=lambda: Recent(MEMORY))
    answered: Recent[Key, None] = field(default_factory=lambda: Recent(MEMORY))
    cancelled: Recent[Key, None] = field(default_factory=lambda: Recent(MEMORY))
    #: progress token -> (the request's key, the last progress value)
    tokens: dict[Any, list[Any]] = field(default_factory=dict)
    ended_tokens: Recent[Any, None] = field(default_factory=lambda: Recent(MEMORY))
    #: SSE event id -> hash of the message it carried
    event_ids: Recent[str, int] = field(default_factory=lambda: Recent(MEMORY))
    #: GET streams of this session: stream -> whether it resumed (Last-Event-ID)
    get_streams: dict[str, bool] = field(default_factory=dict)
    #: Whether `initialize-not-first` was said already.
    said_not_first: bool = False
