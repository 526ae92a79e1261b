"""Checking who calls a server on the network: herald as an OAuth 2.1 resource server.

`AuthConfig` names the one authorization server trusted and this server's own URI; give it
to `HttpConfig(auth=...)`. Tokens are checked by `verifier_for(config)`: JWTs against the
issuer's keys, or opaque tokens by introspection. A valid token stands for a `Principal`
(`herald.server.principal`), which owns the jobs it starts.
"""

from __future__ import annotations

from herald.auth.config import AuthConfig, Introspection
from herald.auth.tokens import InvalidToken, IssuerUnreachable, TokenVerifier, verifier_for

__all__ = [
    "AuthConfig",
    "Introspection",
    "InvalidToken",
    "IssuerUnreachable",
    "TokenVerifier",
    "verifier_for",
]
