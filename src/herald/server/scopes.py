"""The OAuth scopes a request needs: the server's own, and those of what it names.

`@server.tool(scopes=[...])` (and resources, templates, prompts, jobs) declares that
calling it takes scopes beyond the ones every request needs; the HTTP transport checks
them once it knows the caller (`herald.server.principal`). Where tokens are asked for,
`tools/list` tells each tool's scopes as ChatGPT's `securitySchemes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from herald.server.registry import Registry

__all__ = ["ANONYMOUS_METHODS", "Scopes"]

#: What a request without a token may ask where some tool is public (`Scopes.anonymous_may`).
ANONYMOUS_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        # A public tool run as a task is followed the way tasks are: each is its owner's.
        "tasks/get",
        "tasks/result",
        "tasks/cancel",
        "tasks/list",
    }
)


class Scopes:
    """The scopes declared on what a server offers, and those every request needs."""

    def __init__(self) -> None:
        #: "tool:NAME", "resource:URI", "template:URI_TEMPLATE", "prompt:NAME" -> its scopes.
        self.declared: dict[str, frozenset[str]] = {}
        #: Set by a transport that asks for OAuth tokens: the scopes every request needs. Tools
        #: then carry `securitySchemes`, and `tools/list` says which scopes each one needs.
        self.every_request: frozenset[str] | None = None
        #: Tools callable without a token (`@server.tool(auth=False)`). With any, a request
        #: without a token may still discover the server and call them (`anonymous_may`).
        self.public: set[str] = set()
        #: Set by a transport that asks for tokens: the `WWW-Authenticate` challenge for
        #: `scopes` (and an OAuth `error`), which a tool result carries to ask for consent.
        self.challenge: Callable[[Iterable[str], str | None], str] | None = None

    def declare(self, kind: str, name: str, scopes: Iterable[str]) -> None:
        wanted = frozenset(scopes)
        if isinstance(scopes, str) or any(not isinstance(scope, str) or not scope for scope in wanted):
            raise TypeError(f"scopes of {kind} {name!r} must be a list of scope names, not {scopes!r}")
        if wanted:
            self.declared[f"{kind}:{name}"] = wanted
        else:
            self.declared.pop(f"{kind}:{name}", None)

    def required(self, registry: Registry, method: str, params: Mapping[str, Any] | None) -> frozenset[str]:
        """The scopes a request needs beyond every request's: those of the tool, resource,
        template or prompt it names (none for anything else)."""
        if not self.declared or not isinstance(params, Mapping):
            return frozenset()
        if method in ("tools/call", "prompts/get"):
            kind = "tool" if method == "tools/call" else "prompt"
            return self.declared.get(f"{kind}:{params.get('name')}", frozenset())
        if method == "resources/read" and isinstance(params.get("uri"), str):
            uri = params["uri"]
            if registry.find_resource(uri) is not None:
                return self.declared.get(f"resource:{uri}", frozenset())
            found = registry.find_template(uri)
            if found is not None:
                return self.declared.get(f"template:{found[0].uri_template}", frozenset())
        return frozenset()

    def security_schemes(self, tool: str) -> list[dict[str, Any]] | None:
        """A tool's `securitySchemes` (ChatGPT's Apps SDK), when the transport asks for tokens:
        `oauth2` with its scopes, after `noauth` for a tool callable without a token."""
        if self.every_request is None:
            return None
        scopes = sorted(self.every_request | self.declared.get(f"tool:{tool}", frozenset()))
        oauth: list[dict[str, Any]] = [{"type": "oauth2", "scopes": scopes}]
        return [{"type": "noauth"}, *oauth] if tool in self.public else oauth

    def anonymous_may(self, method: str) -> bool:
        """Whether a request without a token may ask `method`: only where some tool is public,
        and only to discover the server and call tools (a protected tool then answers with a
        challenge the host turns into a sign-in)."""
        return bool(self.public) and method in ANONYMOUS_METHODS

    def public_widgets(self, registry: Registry) -> frozenset[str]:
        """The `ui://` documents of the public tools, which a guest's host reads to show them."""
        uris = set()
        for name in self.public:
            tool = registry.tools.get(name)
            ui = (tool.meta or {}).get("ui") if tool is not None else None
            if isinstance(ui, Mapping) and isinstance(ui.get("resourceUri"), str):
                uris.add(ui["resourceUri"])
        return frozenset(uris)

    def needs_token(self, method: str, params: Mapping[str, Any] | None) -> bool:
        """Whether a request without a token is refused by the handler: a call of a tool that
        is not public, where tokens are asked for."""
        if self.every_request is None or method != "tools/call" or not isinstance(params, Mapping):
            return False
        return params.get("name") not in self.public
