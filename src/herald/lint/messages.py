"""What the specification says each method needs: capabilities, parameter names, result fields.

Tables, read by the linter; the method lists are those of 2025-11-25 and 2026-07-28.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

Path = tuple[str, ...]

#: The server capability a client request needs.
SERVER_CAPABILITY: Final[dict[str, Path]] = {
    "tools/list": ("tools",),
    "tools/call": ("tools",),
    "resources/list": ("resources",),
    "resources/read": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts",),
    "prompts/get": ("prompts",),
    "logging/setLevel": ("logging",),
    "completion/complete": ("completions",),
}

#: The client capability a server request needs.
CLIENT_CAPABILITY: Final[dict[str, Path]] = {
    "sampling/createMessage": ("sampling",),
    "elicitation/create": ("elicitation",),
    "roots/list": ("roots",),
}

#: Methods that are requests, in either era and either direction: sent without an id, they go unanswered.
REQUEST_METHODS: Final = frozenset(
    {
        *SERVER_CAPABILITY,
        *CLIENT_CAPABILITY,
        "initialize",
        "ping",
        "server/discover",
        "subscriptions/listen",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    }
)

_UNDECLARED: Final = "capabilities/undeclared"
_LIST_CHANGED: Final = "capabilities/list-changed-undeclared"

#: A notification -> (the rule it breaks without it, the capability it needs of its sender).
NOTIFICATION_NEEDS: Final[dict[str, tuple[str, Path]]] = {
    "notifications/message": (_UNDECLARED, ("logging",)),
    "notifications/resources/updated": (_UNDECLARED, ("resources", "subscribe")),
    "notifications/roots/list_changed": (_UNDECLARED, ("roots", "listChanged")),
    "notifications/tools/list_changed": (_LIST_CHANGED, ("tools", "listChanged")),
    "notifications/resources/list_changed": (_LIST_CHANGED, ("resources", "listChanged")),
    "notifications/prompts/list_changed": (_LIST_CHANGED, ("prompts", "listChanged")),
}

STANDARD_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/roots/list_changed",
        "notifications/elicitation/complete",
        "notifications/tasks/status",
        "notifications/subscriptions/acknowledged",
    }
)

_TOOL_FIELDS: Final = {
    "tool": "name",
    "toolName": "name",
    "tool_name": "name",
    "args": "arguments",
    "input": "arguments",
    "parameters": "arguments",
}
_RESOURCE_FIELDS: Final = {
    "resourceId": "uri",
    "resource_id": "uri",
    "resource": "uri",
    "url": "uri",
    "id": "uri",
}

#: method -> (the parameters it must have, {a name people send instead: the right one})
WRONG_PARAM_NAMES: Final[dict[str, tuple[tuple[str, ...], dict[str, str]]]] = {
    "tools/call": (("name",), _TOOL_FIELDS),
    "prompts/get": (("name",), {"prompt": "name", "promptName": "name", "args": "arguments"}),
    "resources/read": (("uri",), _RESOURCE_FIELDS),
    "resources/subscribe": (("uri",), _RESOURCE_FIELDS),
    "resources/unsubscribe": (("uri",), _RESOURCE_FIELDS),
}

#: Fields a complete result of each method must have.
REQUIRED_RESULT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "initialize": ("protocolVersion", "capabilities", "serverInfo"),
    "server/discover": ("supportedVersions", "capabilities"),
    "tools/list": ("tools",),
    "tools/call": ("content",),
    "resources/list": ("resources",),
    "resources/templates/list": ("resourceTemplates",),
    "resources/read": ("contents",),
    "prompts/list": ("prompts",),
    "prompts/get": ("messages",),
    "completion/complete": ("completion",),
}

#: Codes JSON-RPC defines in its reserved range; -32000..-32099 are the server's own.
DEFINED_CODES: Final = frozenset({-32700, -32600, -32601, -32602, -32603})
#: 2026-07-28 defines these in its range -32020..-32099, and forbids the two older MCP codes.
MODERN_DEFINED_CODES: Final = frozenset({-32020, -32021, -32022})
MODERN_FORBIDDEN_CODES: Final = frozenset({-32002, -32042})


def has_capability(declared: dict[str, Any], path: Path) -> bool:
    """Whether `declared` has the capability at `path` (a sub-capability must be true)."""
    value: Any = declared
    for part in path:
        if not isinstance(value, dict) or part not in value or value[part] in (None, False):
            return False
        value = value[part]
    return True


#: Result fields whose presence varies by design (paging, errors, 2026 bookkeeping).
_VARYING: Final = frozenset({"_meta", "nextCursor", "isError", "resultType", "ttlMs", "cacheScope"})


@dataclass(frozen=True, slots=True)
class Shape:
    """A result's top-level fields, and the kind of its structured content (with its fields)."""

    fields: frozenset[str]
    structured: str | None = None
    structured_fields: frozenset[str] | None = None

    def __str__(self) -> str:
        inner = f" with structuredContent {self.structured}" if self.structured else ""
        if self.structured_fields is not None:
            inner += " {" + ", ".join(sorted(self.structured_fields)) + "}"
        return "{" + ", ".join(sorted(self.fields)) + "}" + inner


def result_shape(result: dict[str, Any]) -> Shape:
    fields = frozenset(result) - _VARYING
    if "structuredContent" not in result:
        return Shape(fields)
    structured = result["structuredContent"]
    if isinstance(structured, dict):
        return Shape(fields, "object", frozenset(structured))
    return Shape(fields, _json_type(structured))


def shapes_agree(first: Shape, then: Shape) -> bool:
    """Optional fields may come and go; a renamed field or a changed type may not."""
    if not (first.fields <= then.fields or then.fields <= first.fields):
        return False
    if first.structured is None or then.structured is None:
        return True
    if first.structured != then.structured:
        return False
    if first.structured_fields is None or then.structured_fields is None:
        return True
    return (
        first.structured_fields <= then.structured_fields or then.structured_fields <= first.structured_fields
    )


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__
