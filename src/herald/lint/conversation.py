"""What the linter keeps of one conversation: a stdio connection, an HTTP session, or (in the
2026-07-28 era over HTTP) one exchange.

A conversation is where ids are paired and the handshake is followed: its era and
version as the log shows them, the capabilities each side declared, the requests in
flight in each direction and the progress tokens they gave. What already happened (ids
used, requests answered or cancelled, SSE event ids) is kept in one `Memory` for the
whole log, bounded however many conversations there are.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

from herald.lint.bounded import Recent
from herald.protocol.versions import Era

#: How many ids, answers and event ids the whole log's conversations remember (see `Recent`).
MEMORY: Final = 4096
#: Requests in flight one conversation keeps track of (more are forgotten, oldest first).
IN_FLIGHT: Final = 4096

Key = tuple[str, Any]  # (the requester, the request id)


class Phase(enum.IntEnum):
    """How far the handshake has come (handshake era only)."""

    NEW = 0  # nothing yet
    INITIALIZING = 1  # `initialize` sent, not answered
    ANSWERED = 2  # `initialize` answered, `notifications/initialized` not sent
    READY = 3  # `notifications/initialized` sent


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
    #: Unique in the log: the key of this conversation's entries in `Memory`.
    number: int
    #: Whether the log shows its beginning (so "initialize came first" can be judged).
    from_start: bool = False
    era: Era | None = None
    version: str | None = None
    phase: Phase = Phase.NEW
    client_capabilities: dict[str, Any] | None = None
    server_capabilities: dict[str, Any] | None = None
    #: Requests in flight, by (requester, id).
    pending: Recent[Key, Pending] = field(default_factory=lambda: Recent(IN_FLIGHT))
    #: progress token -> (the request's key, the last progress value)
    tokens: Recent[Any, list[Any]] = field(default_factory=lambda: Recent(IN_FLIGHT))
    #: GET streams of this session: stream -> whether it resumed (Last-Event-ID)
    get_streams: Recent[str, bool] = field(default_factory=lambda: Recent(64))
    #: Whether `initialize-not-first` was said already.
    said_not_first: bool = False
    #: Methods found within the declared capabilities once the handshake was done.
    allowed: set[str] = field(default_factory=set)


class Memory:
    """What every conversation remembers of its past, kept in one bounded place for the whole log.

    Keys start with the conversation's number, so conversations never see each other's
    entries, and the memory is the same size however many conversations the log holds.
    """

    __slots__ = ("answered", "cancelled", "ended_tokens", "event_ids", "used")

    def __init__(self, capacity: int = MEMORY) -> None:
        #: (conversation, requester, id) of requests sent, and of those answered or cancelled.
        self.used: Recent[tuple[int, str, Any], None] = Recent(capacity)
        self.answered: Recent[tuple[int, str, Any], None] = Recent(capacity)
        self.cancelled: Recent[tuple[int, str, Any], None] = Recent(capacity)
        #: (conversation, token) of progress tokens whose request was answered.
        self.ended_tokens: Recent[tuple[int, Any], None] = Recent(capacity)
        #: (conversation, SSE event id) -> hash of the message it carried.
        self.event_ids: Recent[tuple[int, str], int] = Recent(capacity)

    def trim(self) -> None:
        for memory in (self.used, self.answered, self.cancelled, self.ended_tokens, self.event_ids):
            memory.trim()
