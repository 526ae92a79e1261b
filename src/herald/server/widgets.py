"""Widgets: one HTML view declared once, described in both hosts' vocabularies.

Two families of hosts render a tool's result in a sandboxed iframe. MCP Apps hosts
(Claude, VS Code, ChatGPT today) follow `io.modelcontextprotocol/ui`: a `ui://` resource
of type `text/html;profile=mcp-app`, linked from the tool by `_meta.ui.resourceUri`, with
`_meta.ui.csp`, `prefersBorder` and `domain` on the content. The ChatGPT Apps SDK, which
older ChatGPT clients still read, says the same things under `openai/*` keys with
snake_case CSP fields. A `Widget` is written once and this module writes both, so an app
never keeps two descriptions in step by hand.

The URI carries a hash of everything a host caches (the document and its metadata),
because hosts cache a template by URI: a changed widget must get a new URI or users keep
the old one. Older URIs of the same widget stay readable and answer with the current
document, so a conversation that cached one still renders.

Nothing here is gated on the client declaring the UI extension: hosts do not do it
reliably, and a client that ignores `_meta` loses nothing, since every tool result still
carries text content.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final, Literal

import orjson

#: The MIME type of an MCP Apps HTML view (SEP-1865, 2026-01-26).
UI_MIME_TYPE: Final = "text/html;profile=mcp-app"
#: The extension's identifier, as hosts declare it under `capabilities.extensions`.
UI_EXTENSION: Final = "io.modelcontextprotocol/ui"
#: ChatGPT shows these strings while a tool runs and after; it cuts longer ones.
MAX_STATUS_TEXT: Final = 64

Audience = Literal["model", "app"]
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\Z")


@dataclass(frozen=True, slots=True)
class WidgetCSP:
    """The origins a widget may reach beyond its own document; empty means none.

    Hosts build the iframe's Content-Security-Policy from these and allow nothing else,
    so a self-contained widget declares nothing. `redirect_domains` exists only in the
    ChatGPT vocabulary (links it may open without a confirmation), `base_uri_domains` only
    in MCP Apps.
    """

    connect_domains: tuple[str, ...] = ()
    resource_domains: tuple[str, ...] = ()
    frame_domains: tuple[str, ...] = ()
    base_uri_domains: tuple[str, ...] = ()
    redirect_domains: tuple[str, ...] = ()

    def for_mcp_apps(self) -> dict[str, list[str]]:
        # An empty frame or base-uri list would read as "declared", so only listed ones are sent.
        csp = {"connectDomains": list(self.connect_domains), "resourceDomains": list(self.resource_domains)}
        if self.frame_domains:
            csp["frameDomains"] = list(self.frame_domains)
        if self.base_uri_domains:
            csp["baseUriDomains"] = list(self.base_uri_domains)
        return csp

    def for_openai(self) -> dict[str, list[str]]:
        csp = {"connect_domains": list(self.connect_domains), "resource_domains": list(self.resource_domains)}
        if self.frame_domains:
            csp["frame_domains"] = list(self.frame_domains)
        if self.redirect_domains:
            csp["redirect_domains"] = list(self.redirect_domains)
        return csp


@dataclass(frozen=True)
class Widget:
    """An HTML view for tool results, in every host.

    `name` becomes the URI `ui://<namespace>/<name>-<hash>.html`; the namespace is the
    server's name unless given. `domain` is deployment configuration (the origin the host
    should give the iframe, e.g. the public origin of the server), so apps take it as a
    setting rather than writing a constant.
    """

    name: str
    html: str
    title: str | None = None
    description: str | None = None
    csp: WidgetCSP = field(default_factory=WidgetCSP)
    prefers_border: bool = True
    domain: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"widget name {self.name!r} must be lowercase letters, digits and dashes")
        if not self.html.lstrip()[:15].lower().startswith("<!doctype html"):
            raise ValueError(f"widget {self.name!r} must be a whole HTML5 document, starting <!DOCTYPE html>")

    def content_meta(self) -> dict[str, Any]:
        """`_meta` of the resource and its content: the MCP Apps keys and their ChatGPT twins."""
        ui: dict[str, Any] = {"csp": self.csp.for_mcp_apps(), "prefersBorder": self.prefers_border}
        meta: dict[str, Any] = {
            "ui": ui,
            "openai/widgetCSP": self.csp.for_openai(),
            "openai/widgetPrefersBorder": self.prefers_border,
        }
        if self.description is not None:
            meta["openai/widgetDescription"] = self.description
        if self.domain is not None:
            ui["domain"] = self.domain
            meta["openai/widgetDomain"] = self.domain
        return meta

    @cached_property
    def version(self) -> str:
        """A short hash of the document and its metadata: what a host caches under the URI."""
        digest = hashlib.sha256(self.html.encode())
        digest.update(orjson.dumps(self.content_meta(), option=orjson.OPT_SORT_KEYS))
        return digest.hexdigest()[:12]

    def family(self, namespace: str) -> str:
        """The URI prefix every version of this widget shares."""
        return f"ui://{self.namespace or namespace}/{self.name}-"

    def uri(self, namespace: str) -> str:
        return f"{self.family(namespace)}{self.version}.html"


@dataclass(frozen=True, slots=True)
class ToolUI:
    """How one tool appears in hosts that render widgets.

    `visibility` says who may call the tool: the model, the widget ("app"), or both.
    A tool only the widget calls (paging, a refresh button) is `("app",)`: hosts keep it
    out of the model's tool list. `invoking` and `invoked` are the short status lines
    ChatGPT shows while the tool runs and after it.
    """

    widget: Widget | None = None
    visibility: tuple[Audience, ...] = ("model", "app")
    invoking: str | None = None
    invoked: str | None = None

    def __post_init__(self) -> None:
        if not self.visibility or set(self.visibility) - {"model", "app"}:
            raise ValueError(f"visibility must name 'model', 'app' or both, not {self.visibility!r}")
        for label, value in (("invoking", self.invoking), ("invoked", self.invoked)):
            if value is not None and not 0 < len(value) <= MAX_STATUS_TEXT:
                raise ValueError(f"{label} must be 1 to {MAX_STATUS_TEXT} characters, not {len(value)}")

    def tool_meta(self, namespace: str) -> dict[str, Any]:
        """The tool's `_meta` keys in both vocabularies."""
        ui: dict[str, Any] = {"visibility": list(self.visibility)}
        meta: dict[str, Any] = {
            "ui": ui,
            "openai/widgetAccessible": "app" in self.visibility,
            "openai/visibility": "public" if "model" in self.visibility else "private",
        }
        if self.widget is not None:
            uri = self.widget.uri(namespace)
            ui["resourceUri"] = uri
            meta["openai/outputTemplate"] = uri
        if self.invoking is not None:
            meta["openai/toolInvocation/invoking"] = self.invoking
        if self.invoked is not None:
            meta["openai/toolInvocation/invoked"] = self.invoked
        return meta


def app_only(widget: Widget | None = None) -> ToolUI:
    """A tool for the widget alone: hosts hide it from the model."""
    return ToolUI(widget, visibility=("app",))


def merge_meta(own: dict[str, Any] | None, ui_meta: dict[str, Any]) -> dict[str, Any]:
    """A tool's own `_meta` with the UI keys added; its own `ui` entries win where both speak."""
    merged = {**ui_meta, **(own or {})}
    if own and isinstance(own.get("ui"), dict):
        merged["ui"] = {**ui_meta["ui"], **own["ui"]}
    return merged
