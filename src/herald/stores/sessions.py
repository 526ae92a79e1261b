"""The session store: handshake-era sessions kept where every replica can find them.

A session minted by `initialize` on one replica is saved here, and any replica that
later receives a request naming it loads it and serves it: the version the client
negotiated, its capabilities and info, its log level, its resource subscriptions, whether
it said `initialized`, and the owner id its jobs are filed under (so their events reach it
wherever it is served). A session that is not used for its time to live expires here as
it does in a replica's memory, and `delete` (HTTP DELETE) ends it for every replica.

The session store is what the HTTP replicas share besides jobs and event streams, so it
also holds the key that seals 2026-07-28 `requestState` (`shared_key`: a round begun on
one replica goes on at any other), and carries messages between replicas (`publish`,
`follow`): the notifications one replica sends for its clients (`list_changed`,
`resources/updated`) and the answers to a task's input. A message is a wake-up at most
once; whatever must not be lost is in a store, and the message only says where to look.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson


@dataclass(slots=True)
class SessionRecord:
    """What a replica needs to serve a session it did not mint: plain data."""

    session_id: str
    protocol_version: str
    owner: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    #: The client has sent `notifications/initialized`: the server may speak first.
    operating: bool = False

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "protocolVersion": self.protocol_version,
                "owner": self.owner,
                "clientCapabilities": self.client_capabilities,
                "clientInfo": self.client_info,
                "logLevel": self.log_level,
                "subscriptions": self.subscriptions,
                "operating": self.operating,
            }
        )

    @classmethod
    def from_json(cls, session_id: str, data: bytes) -> SessionRecord:
        fields = orjson.loads(data)
        return cls(
            session_id=session_id,
            protocol_version=fields["protocolVersion"],
            owner=fields["owner"],
            client_capabilities=fields.get("clientCapabilities") or {},
            client_info=fields.get("clientInfo"),
            log_level=fields.get("logLevel"),
            subscriptions=list(fields.get("subscriptions") or ()),
            operating=bool(fields.get("operating")),
        )


#: Hears one message another replica (or this one) published.
HearMessage = Callable[[bytes], Awaitable[None]]


class SessionStore(Protocol):
    async def save(self, record: SessionRecord, ttl: float) -> None:
        """Store the session as it is now; it expires `ttl` seconds from now unless used."""

    async def load(self, session_id: str, ttl: float | None) -> SessionRecord | None:
        """The live session with this id, or None; with `ttl`, it lives that long from now."""

    async def delete(self, session_id: str) -> bool:
        """End the session for every replica; False if there was none."""

    async def shared_key(self) -> bytes:
        """A random 32-byte key, made by the first replica that asks and the same for all."""

    async def publish(self, message: bytes) -> None:
        """Send `message` to every replica following the store now (at most once)."""

    async def follow(self, hear: HearMessage) -> None:
        """Hear every message published from now on, this replica's own too, until cancelled."""

    async def aclose(self) -> None:
        """Release the backend."""
