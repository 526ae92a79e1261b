"""The 2026-07-28 per-request envelope: what `_meta` must carry instead of a handshake.

A modern request names its protocol version and the client's capabilities in
`params._meta` on every call; nothing is remembered between requests. This module
reads and checks that envelope, and lists the methods the revision removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_types import CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY

from herald.protocol.errors import InvalidParams, MethodNotFound, UnsupportedProtocolVersion
from herald.protocol.versions import CLIENT_CAPABILITIES_KEY, MODERN_VERSIONS, PROTOCOL_VERSION_KEY

#: Handshake-era methods that do not exist on the modern wire.
REMOVED_METHODS: Final[frozenset[str]] = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)


@dataclass(frozen=True, slots=True)
class Envelope:
    """What one modern request says about itself."""

    version: str
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    log_level: str | None
    progress_token: str | int | None


def is_modern_request(method: str, params: Mapping[str, Any] | None) -> bool:
    """A request is modern when it carries a protocol version in `_meta` (or is discovery)."""
    if method == "server/discover":
        return True
    meta = params.get("_meta") if params else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def read_envelope(method: str, params: Mapping[str, Any] | None) -> Envelope:
    """Check the envelope in the order clients can rely on: shape, version, method."""
    meta = params.get("_meta") if params else None
    if not isinstance(meta, dict):
        raise InvalidParams(f"Invalid params for {method}: missing '_meta' with '{PROTOCOL_VERSION_KEY}'")
    if PROTOCOL_VERSION_KEY not in meta:
        raise InvalidParams(f"Invalid params for {method}: '_meta' lacks '{PROTOCOL_VERSION_KEY}'")
    capabilities = meta.get(CLIENT_CAPABILITIES_KEY)
    if not isinstance(capabilities, dict):
        raise InvalidParams(
            f"Invalid params for {method}: '_meta' lacks the object '{CLIENT_CAPABILITIES_KEY}' "
            "(send {} when the client has none)"
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if version not in MODERN_VERSIONS:
        raise UnsupportedProtocolVersion(version, MODERN_VERSIONS)
    if method in REMOVED_METHODS:
        raise MethodNotFound(f"Method not found: {method} does not exist in protocol version {version}")
    client_info = meta.get(CLIENT_INFO_META_KEY)
    log_level = meta.get(LOG_LEVEL_META_KEY)
    token = meta.get("progressToken")
    return Envelope(
        version=version,
        client_capabilities=capabilities,
        client_info=client_info if isinstance(client_info, dict) else None,
        log_level=log_level if isinstance(log_level, str) else None,
        progress_token=token if isinstance(token, str | int) and not isinstance(token, bool) else None,
    )


def with_envelope(
    params: Mapping[str, Any] | None,
    *,
    capabilities: Mapping[str, Any],
    client_info: Mapping[str, Any] | None = None,
    version: str = MODERN_VERSIONS[-1],
) -> dict[str, Any]:
    """A client's params with the 2026-07-28 envelope in `_meta` (what the caller set wins)."""
    found = dict(params or {})
    meta = dict(found.get("_meta") or {})
    meta.setdefault(PROTOCOL_VERSION_KEY, version)
    meta.setdefault(CLIENT_CAPABILITIES_KEY, dict(capabilities))
    if client_info is not None:
        meta.setdefault(CLIENT_INFO_META_KEY, dict(client_info))
    found["_meta"] = meta
    return found
