"""In-process stores: fast and simple, for one process and for tests."""

from __future__ import annotations

from herald.stores.eventlog import StoredEvent


class MemoryEventLog:
    """An `EventLog` in a dict; everything is lost with the process."""

    def __init__(self) -> None:
        self._streams: dict[str, dict[str, list[bytes]]] = {}

    async def append(self, session: str, stream: str, data: bytes) -> int:
        events = self._streams.setdefault(session, {}).setdefault(stream, [])
        events.append(data)
        return len(events)

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        events = self._streams.get(session, {}).get(stream, [])
        start = max(position, 0)
        return [StoredEvent(index, data) for index, data in enumerate(events[start:], start + 1)]

    async def forget(self, session: str) -> None:
        self._streams.pop(session, None)

    async def aclose(self) -> None:
        self._streams.clear()
