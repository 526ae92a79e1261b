"""Everything one request is served with, whichever era and transport it came by."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from herald.protocol.messages import Request
from herald.protocol.modern import read_envelope
from herald.server.inputs import ClientRequester
from herald.server.outbox import Outbox


@dataclass(slots=True)
class ClientSession:
    """Handshake-era state that outlives a request: plain data, so a store can hold it."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None = None
    subscriptions: set[str] = field(default_factory=set)


@dataclass(slots=True)
class RequestScope:
    """One request plus what its era says about the client."""

    request: Request
    version: str
    modern: bool
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    outbox: Outbox
    progress_token: str | int | None = None
    log_threshold: str | None = None
    session: ClientSession | None = None
    requester: ClientRequester | None = None
    close_stream: Callable[[], None] | None = None
    owner: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        return self.request.params or {}


def modern_scope(request: Request, outbox: Outbox) -> RequestScope:
    """The scope of a 2026-07-28 request: everything comes from its own `_meta`."""
    envelope = read_envelope(request.method, request.params)
    return RequestScope(
        request=request,
        version=envelope.version,
        modern=True,
        client_capabilities=envelope.client_capabilities,
        client_info=envelope.client_info,
        outbox=outbox,
        progress_token=envelope.progress_token,
        log_threshold=envelope.log_level,
    )
