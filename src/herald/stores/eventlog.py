"""The event log: every event a stream carries, written before it is sent.

A stream is named by its owner (`session`) and a name within it (`stream`). Positions
are per stream and start at 1, so "what followed position 5 of stream p3 of session S"
is a range read. Keeping the owner in the key is what makes a replay "for that session
only": the same event id presented by another session finds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as the log holds it: its position in its stream and its bytes."""

    position: int
    data: bytes


class EventLog(Protocol):
    async def append(self, session: str, stream: str, data: bytes) -> int:
        """Store one event at the end of the stream and return its position."""

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        """Every event of the stream after `position`, oldest first."""

    async def forget(self, session: str) -> None:
        """Drop everything the session's streams held (the session ended)."""

    async def forget_stream(self, session: str, stream: str) -> None:
        """Drop one stream's events (it finished long enough ago that nobody will resume it)."""

    async def aclose(self) -> None:
        """Release the backend."""
