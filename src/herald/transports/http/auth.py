"""The bearer-token gate of the HTTP endpoint, when the server is an OAuth resource server.

Every request must carry `Authorization: Bearer <access token>`. The gate checks the token
(`herald.auth.tokens`), turns it into the request's `Principal`, and refuses with the
answer the MCP authorization spec asks for: 401 and a challenge pointing at the resource
metadata for a missing or bad token, 403 `insufficient_scope` naming the scopes needed for
a token that lacks them, 503 when the issuer's keys cannot be read just now.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from herald.auth.config import AuthConfig
from herald.auth.resource import challenge
from herald.auth.verifier import InvalidToken, IssuerUnreachable, TokenVerifier
from herald.protocol.http import HTTPError
from herald.server.principal import Principal


class Refused(HTTPError):
    """401, 403 or 400 with the `WWW-Authenticate` challenge that says how to do better."""

    def __init__(self, status: int, message: str, challenge: str) -> None:
        super().__init__(status, message)
        self.challenge = challenge


class Gate:
    def __init__(self, config: AuthConfig, verifier: TokenVerifier) -> None:
        self.config = config
        self.verifier = verifier

    async def principal(self, headers: Mapping[str, str]) -> Principal:
        """Who the request's token stands for, with the scopes every request needs."""
        value = headers.get("authorization")
        if value is None:
            raise Refused(
                401,
                "Unauthorized: this server needs an access token (Authorization: Bearer …); "
                "its resource metadata names the authorization server to get one from",
                challenge(self.config, scopes=self.config.required_scopes),
            )
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused(
                400,
                "Bad Request: send the access token as Authorization: Bearer <token>",
                challenge(self.config, error="invalid_request", description="use the Bearer scheme"),
            )
        try:
            principal = await self.verifier.verify(token.strip())
        except InvalidToken as why:
            raise Refused(
                401,
                f"Unauthorized: {why}",
                challenge(self.config, error="invalid_token", description=str(why)),
            ) from None
        except IssuerUnreachable as why:
            raise HTTPError(
                503, f"Service Unavailable: the token cannot be checked now ({why}); try again shortly"
            ) from None
        self.require(principal, self.config.required_scopes)
        # The token itself goes with the principal, for a tool to act on the caller's behalf.
        return dataclasses.replace(principal, token=token.strip())

    def challenge(self, scopes: Iterable[str], error: str | None = None) -> str:
        """The `WWW-Authenticate` value asking for a token with `scopes` (and every request's)."""
        needed = frozenset(scopes) | self.config.required_scopes
        description = "sign in to use this tool" if error is None else "this needs more scopes"
        return challenge(self.config, error=error, description=description if error else None, scopes=needed)

    def refuse_anonymous(self, method: str) -> Refused:
        """401 for a message without a token that only a signed-in caller may send."""
        return Refused(
            401,
            f"Unauthorized: {method} needs an access token (Authorization: Bearer …)",
            challenge(self.config, scopes=self.config.required_scopes),
        )

    def require(self, principal: Principal, scopes: Iterable[str]) -> None:
        """403 `insufficient_scope`, naming what is needed, if the token lacks any of `scopes`."""
        needed = frozenset(scopes) | self.config.required_scopes
        missing = needed - principal.scopes
        if missing:
            said = ", ".join(sorted(missing))
            raise Refused(
                403,
                f"Forbidden: the access token lacks the scope {said}",
                challenge(
                    self.config,
                    error="insufficient_scope",
                    description=f"this needs the scope {said}",
                    scopes=needed,
                ),
            )
