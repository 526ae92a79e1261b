"""What a server offers: tools, resources, resource templates and prompts.

Each registration is an immutable spec holding the wire description and the callable.
The registry keeps them in registration order (lists are deterministic) and tells its
listeners which list changed, so connections can send `list_changed` where declared.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

import jsonschema_rs

from herald.server.signature import Signature

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
    validator: Any = field(default=None, compare=False)
    output_validator: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Compiled once at registration: every call is validated, so it must be cheap.
        object.__setattr__(self, "validator", jsonschema_rs.validator_for(self.input_schema))
        if self.output_schema is not None:
            object.__setattr__(self, "output_validator", jsonschema_rs.validator_for(self.output_schema))

    def to_wire(self) -> dict[str, Any]:
        tool: dict[str, Any] = {"name": self.name, "description": self.description}
        tool["inputSchema"] = self.input_schema
        _put(tool, "title", self.title)
        _put(tool, "outputSchema", self.output_schema)
        _put(tool, "annotations", self.annotations)
        _put(tool, "icons", self.icons)
        _put(tool, "_meta", self.meta)
        return tool


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
        resource: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _put(resource, "title", self.title)
        _put(resource, "description", self.description)
        _put(resource, "mimeType", self.mime_type)
        _put(resource, "annotations", self.annotations)
        _put(resource, "icons", self.icons)
        _put(resource, "_meta", self.meta)
        return resource


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
        template: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        _put(template, "title", self.title)
        _put(template, "description", self.description)
        _put(template, "mimeType", self.mime_type)
        _put(template, "annotations", self.annotations)
        _put(template, "icons", self.icons)
        _put(template, "_meta", self.meta)
        return template


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str | None
    required: bool

    def to_wire(self) -> dict[str, Any]:
        argument: dict[str, Any] = {"name": self.name, "required": self.required}
        _put(argument, "description", self.description)
        return argument


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
        prompt: dict[str, Any] = {"name": self.name, "arguments": [a.to_wire() for a in self.arguments]}
        _put(prompt, "title", self.title)
        _put(prompt, "description", self.description)
        _put(prompt, "icons", self.icons)
        _put(prompt, "_meta", self.meta)
        return prompt


class Registry:
    """The server's offer, in registration order, with change notification."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}
        self.templates: dict[str, ResourceTemplateSpec] = {}
        self.prompts: dict[str, PromptSpec] = {}
        self._listeners: list[Callable[[ListKind], None]] = []

    def on_change(self, listener: Callable[[ListKind], None]) -> Callable[[], None]:
        """Call `listener` after every change; returns a function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def add_tool(self, spec: ToolSpec) -> None:
        self.tools[spec.name] = spec
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        if self.tools.pop(name, None) is not None:
            self._changed("tools")

    def add_resource(self, spec: ResourceSpec) -> None:
        self.resources[spec.uri] = spec
        self._changed("resources")

    def remove_resource(self, uri: str) -> None:
        if self.resources.pop(uri, None) is not None:
            self._changed("resources")

    def add_template(self, spec: ResourceTemplateSpec) -> None:
        self.templates[spec.uri_template] = spec
        self._changed("resources")

    def add_prompt(self, spec: PromptSpec) -> None:
        self.prompts[spec.name] = spec
        self._changed("prompts")

    def remove_prompt(self, name: str) -> None:
        if self.prompts.pop(name, None) is not None:
            self._changed("prompts")

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
        for listener in list(self._listeners):
            listener(kind)


def _put(target: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        target[key] = value
