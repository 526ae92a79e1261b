"""Everything one request is served with, whichever era and transport it came by."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from herald.protocol.connection import RequestReceived, SessionData
from herald.protocol.messages import Request
from herald.protocol.versions import Era
from herald.server.inputs import ClientRequester
from herald.server.outbox import Outbox
from herald.server.principal import Principal

__all__ = ["RequestScope", "SessionData"]


@dataclass(slots=True)
class RequestScope:
    """One request plus what its era says about the client, and where its messages go."""

    request: Request
    version: str
    era: Era
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    outbox: Outbox
    progress_token: str | int | None = None
    log_threshold: str | None = None
    session: SessionData | None = None
    requester: ClientRequester | None = None
    close_stream: Callable[[], None] | None = None
    owner: str | None = None
    #: The authenticated caller, when the transport authenticates (HTTP with OAuth).
    principal: Principal | None = None
    #: The network address the request came from, where the transport knows it (HTTP).
    peer: str | None = None

    @classmethod
    def of(
        cls,
        received: RequestReceived,
        outbox: Outbox,
        *,
        requester: ClientRequester | None = None,
        close_stream: Callable[[], None] | None = None,
        owner: str | None = None,
        principal: Principal | None = None,
        peer: str | None = None,
    ) -> RequestScope:
        """The scope of a request the protocol connection accepted."""
        return cls(
            request=received.request,
            version=received.version,
            era=received.era,
            client_capabilities=received.client_capabilities,
            client_info=received.client_info,
            outbox=outbox,
            progress_token=received.progress_token,
            log_threshold=received.log_threshold,
            session=received.session,
            requester=requester,
            close_stream=close_stream,
            owner=principal.owner if principal is not None else owner,
            principal=principal,
            peer=peer,
        )

    @property
    def params(self) -> dict[str, Any]:
        return self.request.params or {}
