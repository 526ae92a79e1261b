"""What a protected resource tells its clients: its metadata (RFC 9728) and its challenges.

A client that calls without a token (or with one that will not do) is answered 401 with
`WWW-Authenticate: Bearer resource_metadata="…", scope="…"`: the metadata names the
authorization server to get a token from, and the scopes to ask for. A token without a
scope an operation needs is answered 403 with `error="insufficient_scope"` and the scopes
the operation needs, so the client can ask for them (step-up authorization). Without any
token the challenge carries no error code, as RFC 6750 §3.1 says.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import urlsplit

from herald.auth.config import AuthConfig

WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"


def metadata_path(config: AuthConfig) -> str:
    """Where this resource's metadata is served: the well-known path, then the resource's own."""
    path = urlsplit(config.canonical_audience).path.rstrip("/")
    return WELL_KNOWN + path


def metadata_url(config: AuthConfig) -> str:
    parts = urlsplit(config.canonical_audience)
    return f"{parts.scheme}://{parts.netloc}{metadata_path(config)}"


def metadata(config: AuthConfig) -> dict[str, Any]:
    """The protected resource metadata document (RFC 9728 §2)."""
    document: dict[str, Any] = {
        "resource": config.canonical_audience,
        "authorization_servers": [config.issuer],
        "scopes_supported": sorted(config.required_scopes | config.scopes_supported),
        "bearer_methods_supported": ["header"],
    }
    if config.resource_name:
        document["resource_name"] = config.resource_name
    return document


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(
    config: AuthConfig,
    *,
    error: str | None = None,
    description: str | None = None,
    scopes: Iterable[str] = (),
) -> str:
    """A `WWW-Authenticate` value: `Bearer` with the metadata URL, and the error and scopes if any."""
    parts = []
    if error is not None:
        parts.append(f"error={_quoted(error)}")
    if description is not None:
        parts.append(f"error_description={_quoted(description)}")
    wanted = sorted(set(scopes))
    if wanted:
        parts.append(f"scope={_quoted(' '.join(wanted))}")
    parts.append(f"resource_metadata={_quoted(metadata_url(config))}")
    return "Bearer " + ", ".join(parts)
