"""Checking who calls a server on the network: herald as an OAuth 2.1 resource server.

`AuthConfig` names the one authorization server trusted and this server's own URI; give it
to `HttpConfig(auth=...)`. Tokens are checked by `herald.auth.tokens.verifier_for(config)`,
used inside `async with`: JWTs against the issuer's keys (`herald.auth.keys`), or opaque
tokens by introspection, and the claims of both alike (`herald.auth.claims`). That module is imported
only by a server that asks for tokens, since PyJWT, cryptography and httpx weigh about
20 MiB. A valid token stands for a `Principal` (`herald.server.principal`), which owns the
jobs it starts.
"""

from __future__ import annotations

from herald.auth.config import AuthConfig, Introspection
from herald.auth.verifier import InvalidToken, IssuerUnreachable, TokenVerifier

__all__ = [
    "AuthConfig",
    "Introspection",
    "InvalidToken",
    "IssuerUnreachable",
    "TokenVerifier",
]
