"""Which official wire type checks each method, per schema era, built only when first used.

`mcp_types.methods` holds the same version gate, but importing it builds the models of
both schema eras (2025-11-25 for every handshake version, 2026-07-28 for the modern
one), and the 2026-07-28 models alone cost about 50 ms and 4 MiB of start-up. A
handshake-era session never needs them. So this table names each method's wire type
per era, and an era's package is imported the first time a message of that era is
checked. `tests/protocol/test_wire_types.py` holds the table to `mcp_types.methods`:
the same (method, version) pairs resolving to the very same types, so the gate cannot
drift from the official one when mcp-types is upgraded.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any, Final, Literal

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

Direction = Literal["request", "notification", "result"]


@dataclass(frozen=True, slots=True, eq=False)
class EraSchemas:
    """The wire models of one era (`herald.protocol.versions.Era`): their package, and the
    model each method is checked with."""

    package: str
    #: Client requests: method -> model of the whole request frame.
    requests: Mapping[str, str]
    #: Client notifications: method -> model of the whole notification frame.
    notifications: Mapping[str, str]
    #: Server results: method -> the models a result may be (several: a union).
    results: Mapping[str, tuple[str, ...]]


_SHARED_REQUESTS: Final = {
    "completion/complete": "CompleteRequest",
    "prompts/get": "GetPromptRequest",
    "prompts/list": "ListPromptsRequest",
    "resources/list": "ListResourcesRequest",
    "resources/read": "ReadResourceRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "tools/call": "CallToolRequest",
    "tools/list": "ListToolsRequest",
}
_SHARED_RESULTS: Final = {
    "completion/complete": ("CompleteResult",),
    "prompts/list": ("ListPromptsResult",),
    "resources/list": ("ListResourcesResult",),
    "resources/templates/list": ("ListResourceTemplatesResult",),
    "tools/list": ("ListToolsResult",),
}

HANDSHAKE_SCHEMAS: Final = EraSchemas(
    package="mcp_types._v2025_11_25",
    requests={
        **_SHARED_REQUESTS,
        "initialize": "InitializeRequest",
        "logging/setLevel": "SetLevelRequest",
        "ping": "PingRequest",
        "resources/subscribe": "SubscribeRequest",
        "resources/unsubscribe": "UnsubscribeRequest",
    },
    notifications={
        "notifications/cancelled": "CancelledNotification",
        "notifications/initialized": "InitializedNotification",
        "notifications/progress": "ProgressNotification",
        "notifications/roots/list_changed": "RootsListChangedNotification",
    },
    results={
        **_SHARED_RESULTS,
        "initialize": ("InitializeResult",),
        "logging/setLevel": ("Result",),
        "ping": ("Result",),
        "prompts/get": ("GetPromptResult",),
        "resources/read": ("ReadResourceResult",),
        "resources/subscribe": ("Result",),
        "resources/unsubscribe": ("Result",),
        "tools/call": ("CallToolResult",),
    },
)

MODERN_SCHEMAS: Final = EraSchemas(
    package="mcp_types._v2026_07_28",
    requests={
        **_SHARED_REQUESTS,
        "server/discover": "DiscoverRequest",
        "subscriptions/listen": "SubscriptionsListenRequest",
    },
    notifications={"notifications/cancelled": "CancelledNotification"},
    results={
        **_SHARED_RESULTS,
        "prompts/get": ("GetPromptResult", "InputRequiredResult"),
        "resources/read": ("ReadResourceResult", "InputRequiredResult"),
        "server/discover": ("DiscoverResult",),
        "subscriptions/listen": ("SubscriptionsListenResult",),
        "tools/call": ("CallToolResult", "InputRequiredResult"),
    },
)

ERAS: Final[Mapping[str, EraSchemas]] = {
    **dict.fromkeys(HANDSHAKE_PROTOCOL_VERSIONS, HANDSHAKE_SCHEMAS),
    **dict.fromkeys(MODERN_PROTOCOL_VERSIONS, MODERN_SCHEMAS),
}


def wire_type(direction: Direction, method: str, version: str) -> Any:
    """The model (or union of models) that checks `method` at `version`.

    Raises `ValueError` for a version mcp-types does not know (a bug: every version in
    force was negotiated) and `KeyError` when `method` does not exist at `version`.
    """
    era = ERAS.get(version)
    if era is None:
        raise ValueError(f"version must be a known protocol version, got {version!r}")
    return _resolve(era, direction, method)


@cache
def _resolve(era: EraSchemas, direction: Direction, method: str) -> Any:
    package = _package(era.package)
    if direction == "request":
        return getattr(package, era.requests[method])
    if direction == "notification":
        return getattr(package, era.notifications[method])
    arms = [getattr(package, name) for name in era.results[method]]
    union = arms[0]
    for arm in arms[1:]:
        union = union | arm
    return union


@cache
def _package(name: str) -> ModuleType:
    return importlib.import_module(name)


@cache
def adapter(target: Any) -> TypeAdapter[Any]:
    """One adapter per result type, built on first use (building one costs a schema pass)."""
    return TypeAdapter(target)
