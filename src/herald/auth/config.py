"""How a server on the network checks who is calling: an OAuth 2.1 resource server's settings.

The server trusts one authorization server (`issuer`) and accepts only access tokens it
issued for this server (`audience`: the server's canonical URI, as RFC 8707 resource
indicators put it in `aud`). Tokens are JWTs checked against the issuer's keys (found
through its metadata, RFC 8414, unless `jwks_uri` is given), or, for an issuer that hands
out opaque tokens, asked about at its introspection endpoint (RFC 7662).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

LOCAL_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})
#: Signature algorithms accepted by default: asymmetric ones only, so a token cannot be
#: forged with the public key as an HMAC secret, and never `none`.
DEFAULT_ALGORITHMS: Final = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


@dataclass(frozen=True, slots=True)
class Introspection:
    """An introspection endpoint (RFC 7662) and the credentials this server asks it with."""

    endpoint: str
    client_id: str
    client_secret: str


@dataclass(frozen=True, slots=True)
class AuthConfig:
    issuer: str
    #: This server's canonical URI (`https://gifts.example.com/mcp`), the `aud` its tokens carry.
    audience: str
    #: Scopes every request needs; tools, resources and prompts may ask for more.
    required_scopes: frozenset[str] = frozenset()
    #: Scopes to advertise beyond the required ones (the protected resource metadata).
    scopes_supported: frozenset[str] = frozenset()
    jwks_uri: str | None = None
    introspection: Introspection | None = None
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    #: Seconds of clock difference tolerated on `exp` and `nbf`.
    leeway: float = 30.0
    #: How long the issuer's keys are kept before they are fetched again (in the background:
    #: they serve meanwhile, and for as long as the issuer cannot give new ones).
    keys_ttl: float = 600.0
    resource_name: str | None = None

    def __post_init__(self) -> None:
        for name, url in (("issuer", self.issuer), ("audience", self.audience), ("jwks_uri", self.jwks_uri)):
            if url is None:
                continue
            parts = urlsplit(url)
            if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
                raise ValueError(f"{name} must be an absolute https URL without a fragment, not {url!r}")
            # The issuer's metadata and keys decide who may call this server: over plain http
            # only on this machine (tests, local development).
            if parts.scheme == "http" and name != "audience" and parts.hostname not in LOCAL_HOSTS:
                raise ValueError(f"{name} {url!r} must use https: its keys decide who may call this server")
        if "none" in (algorithm.lower() for algorithm in self.algorithms):
            raise ValueError("the algorithm 'none' signs nothing and is never accepted")

    @property
    def canonical_audience(self) -> str:
        """The audience as tokens should carry it: no trailing slash (RFC 8707 §2)."""
        return self.audience.rstrip("/")
