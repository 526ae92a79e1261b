"""Which protocol revisions herald speaks, and which era each belongs to.

The handshake era negotiates one version per session with `initialize`; the modern era
(2026-07-28) carries the version on every request in `_meta`. The lists come from the
official wire-types package so that they move with the schemas we validate against.
"""

from __future__ import annotations

import enum
from typing import Final

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

HANDSHAKE_VERSIONS: Final[tuple[str, ...]] = tuple(HANDSHAKE_PROTOCOL_VERSIONS)
MODERN_VERSIONS: Final[tuple[str, ...]] = tuple(MODERN_PROTOCOL_VERSIONS)
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
LATEST_HANDSHAKE_VERSION: Final[str] = HANDSHAKE_VERSIONS[-1]
LATEST_MODERN_VERSION: Final[str] = MODERN_VERSIONS[-1]

#: Batches were allowed by 2025-03-26 only; 2025-06-18 removed them again.
BATCH_VERSIONS: Final[frozenset[str]] = frozenset({"2025-03-26"})

#: From this revision on, invalid tool arguments are a tool execution error, not -32602.
ARGUMENT_ERRORS_AS_RESULTS_SINCE: Final[str] = "2025-11-25"

PROTOCOL_VERSION_KEY: Final[str] = PROTOCOL_VERSION_META_KEY
CLIENT_CAPABILITIES_KEY: Final[str] = CLIENT_CAPABILITIES_META_KEY


def negotiate(requested: object) -> str:
    """The version `initialize` answers: the client's if we speak it, else our latest."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE_VERSION


def is_at_least(version: str, minimum: str) -> bool:
    """Order two known versions; unknown ones compare as older than everything."""
    if version not in SUPPORTED_VERSIONS:
        return False
    return SUPPORTED_VERSIONS.index(version) >= SUPPORTED_VERSIONS.index(minimum)


def is_modern(version: str) -> bool:
    return version in MODERN_VERSIONS


class Era(enum.Enum):
    """How a conversation is held together: by a negotiated session, or by each request alone.

    The era is derived from the version, once per message, by the connection; everything
    downstream asks the era what it implies instead of re-deciding from the version.
    """

    HANDSHAKE = "handshake"
    MODERN = "modern"

    @classmethod
    def of(cls, version: str) -> Era:
        return cls.MODERN if version in MODERN_VERSIONS else cls.HANDSHAKE

    @property
    def modern(self) -> bool:
        """2026-07-28: `_meta` on every request, typed results, no session to remember."""
        return self is Era.MODERN
