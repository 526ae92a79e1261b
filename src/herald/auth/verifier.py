"""What the HTTP transport needs of a token check: the port and its two refusals.

Kept apart from `herald.auth.tokens` (the verifiers and `verifier_for`), which brings in
PyJWT, cryptography and httpx, about 20 MiB and a few hundred modules: a server that does
not ask for tokens imports this and never loads them.
"""

from __future__ import annotations

from typing import Protocol, Self

from herald.server.principal import Principal


class InvalidToken(Exception):
    """The token is not one this server accepts; `str()` says why (for `error_description`)."""


class IssuerUnreachable(Exception):
    """The issuer's metadata, keys or introspection endpoint could not be read: try again later."""


class TokenVerifier(Protocol):
    """Checks tokens inside `async with`, which owns its connections and background work."""

    async def verify(self, token: str) -> Principal:
        """The principal the token stands for; `InvalidToken` or `IssuerUnreachable` otherwise."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...
