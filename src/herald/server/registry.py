"""What a server offers: tools, resources, resource templates and prompts.

Each registration is an immutable spec holding the wire description and the callable.
The registry keeps them in registration order (lists are deterministic) and tells its
listeners which list changed, so connections can send `list_changed` where declared.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

import jsonschema_rs

from herald.listeners import Listeners
from herald.protocol.versions import Era
from herald.server.signature import OutputShape, Signature

ListKind = Literal["tools", "resources", "prompts"]
Completer = Callable[[str], "list[str] | Awaitable[list[str]]"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A callable tool with its compiled argument validator."""

    name: str
    function: Callable[..., Any]
    signature: Signature
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    #: MCP Tasks: "forbidden" (the default), "optional" or "required".
    task_support: str | None = None
    #: Runs before a task is created, with 2026-07-28 multi-round input (see `Server.tool`).
    task_preflight: Callable[..., Any] | None = None
    #: A `@server.job` tool: it starts a job itself, which is then also its task.
    starts_job: bool = False
    #: What the return annotation says of the structured content, when the output schema
    #: was derived from it (not given): wrapping, the value's own schema, its serializer.
    shape: OutputShape | None = field(default=None, compare=False)
    #: Whether the function is a coroutine function (awaited on the loop), asked once.
    is_async: bool = field(default=False, compare=False, init=False)
    validator: Any = field(default=None, compare=False)
    output_validator: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Compiled once at registration: every call is validated, so it must be cheap.
        object.__setattr__(self, "validator", jsonschema_rs.validator_for(self.input_schema))
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.function))
        if self.output_schema is not None:
            object.__setattr__(self, "output_validator", jsonschema_rs.validator_for(self.output_schema))

    def to_wire(self, era: Era = Era.HANDSHAKE) -> dict[str, Any]:
        tool: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.output_schema is not None:
            shape = self.shape
            bare = shape is not None and shape.wrapped and era.modern  # 2026-07-28: the value's own
            tool["outputSchema"] = shape.value_schema if shape is not None and bare else self.output_schema
        if self.task_support is not None:
            tool["execution"] = {"taskSupport": self.task_support}
        return _with_descriptors(tool, self)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource at a fixed URI."""

    uri: str
    name: str
    function: Callable[..., Any]
    context_parameter: str | None
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_descriptors({"uri": self.uri, "name": self.name}, self)


_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class ResourceTemplateSpec:
    """A family of resources addressed by an RFC 6570 level-1 URI template."""

    uri_template: str
    name: str
    function: Callable[..., Any]
    context_parameter: str | None
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    completers: dict[str, Completer] = field(default_factory=dict)
    pattern: re.Pattern[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        parts = _VARIABLE.split(self.uri_template)
        regex = "".join(
            f"(?P<{part}>[^/?#]+)" if index % 2 else re.escape(part) for index, part in enumerate(parts)
        )
        object.__setattr__(self, "pattern", re.compile(regex + r"\Z"))

    @property
    def variables(self) -> list[str]:
        return _VARIABLE.findall(self.uri_template)

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables in `uri`, percent-decoded as RFC 6570 expansion encoded them."""
        found = self.pattern.match(uri)
        return {name: unquote(value) for name, value in found.groupdict().items()} if found else None

    def to_wire(self) -> dict[str, Any]:
        return _with_descriptors({"uriTemplate": self.uri_template, "name": self.name}, self)


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str | None
    required: bool

    def to_wire(self) -> dict[str, Any]:
        return _with_descriptors({"name": self.name, "required": self.required}, self)


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """A prompt template and the function that renders it."""

    name: str
    function: Callable[..., Any]
    signature: Signature
    arguments: tuple[PromptArgument, ...]
    description: str | None = None
    title: str | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    completers: dict[str, Completer] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        prompt = {"name": self.name, "arguments": [argument.to_wire() for argument in self.arguments]}
        return _with_descriptors(prompt, self)


class Registry:
    """The server's offer, in registration order, with change notification."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}
        self.templates: dict[str, ResourceTemplateSpec] = {}
        self.prompts: dict[str, PromptSpec] = {}
        #: URI prefix -> the current URI, for resources whose older URIs stay readable (widgets).
        self.families: dict[str, str] = {}
        self._listeners: Listeners[[ListKind]] = Listeners()

    def add_listener(self, listener: Callable[[ListKind], None]) -> Callable[[], None]:
        """Call `listener` after every change; returns a function that unsubscribes it."""
        return self._listeners.add(listener)

    def add_tool(self, spec: ToolSpec) -> None:
        self._store(self.tools, spec.name, spec, "tools")

    def remove_tool(self, name: str) -> None:
        self._discard(self.tools, name, "tools")

    def add_resource(self, spec: ResourceSpec) -> None:
        self._store(self.resources, spec.uri, spec, "resources")

    def remove_resource(self, uri: str) -> None:
        self._discard(self.resources, uri, "resources")

    def add_template(self, spec: ResourceTemplateSpec) -> None:
        self._store(self.templates, spec.uri_template, spec, "resources")

    def add_prompt(self, spec: PromptSpec) -> None:
        self._store(self.prompts, spec.name, spec, "prompts")

    def remove_prompt(self, name: str) -> None:
        self._discard(self.prompts, name, "prompts")

    def _store(self, table: dict[str, Any], key: str, spec: object, kind: ListKind) -> None:
        table[key] = spec
        self._changed(kind)

    def _discard(self, table: dict[str, Any], key: str, kind: ListKind) -> None:
        if table.pop(key, None) is not None:
            self._changed(kind)

    def find_resource(self, uri: str) -> ResourceSpec | None:
        """The resource at `uri`, or the current version of the family `uri` belongs to."""
        spec = self.resources.get(uri)
        if spec is None:
            current = next((now for prefix, now in self.families.items() if uri.startswith(prefix)), None)
            spec = self.resources.get(current) if current is not None else None
        return spec

    def find_template(self, uri: str) -> tuple[ResourceTemplateSpec, dict[str, str]] | None:
        for template in self.templates.values():
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def has_completions(self) -> bool:
        specs: Iterator[PromptSpec | ResourceTemplateSpec] = iter(
            [*self.prompts.values(), *self.templates.values()]
        )
        return any(spec.completers for spec in specs)

    def _changed(self, kind: ListKind) -> None:
        self._listeners.tell(kind)


#: Optional descriptive attributes of every spec kind, and their wire names.
_DESCRIPTORS = (
    ("title", "title"),
    ("description", "description"),
    ("mime_type", "mimeType"),
    ("annotations", "annotations"),
    ("icons", "icons"),
    ("meta", "_meta"),
)


def _with_descriptors(wire: dict[str, Any], spec: object) -> dict[str, Any]:
    """Add the descriptive fields `spec` has and sets; absent ones stay off the wire."""
    for attribute, key in _DESCRIPTORS:
        value = getattr(spec, attribute, None)
        if value is not None:
            wire[key] = value
    return wire
