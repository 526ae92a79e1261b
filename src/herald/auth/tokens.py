"""Access tokens checked: JWTs against the issuer's keys, or opaque ones by introspection.

A token is accepted only when its signature is the issuer's (a key of its JWKS, with an
algorithm on the allow list: never `none`, never an HMAC made with a public key), it was
issued by the configured issuer, for this server (`aud`, RFC 8707), and it is within its
lifetime (`exp`, `nbf`, with a small leeway). Every refusal says why, for the
`WWW-Authenticate` challenge. How the issuer's keys are kept and fetched again is
`herald.auth.keys`; what the claims must say is `herald.auth.claims`. A verifier is used
inside `async with`, which owns its connections and its background fetches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Self

import httpx
import jwt

from herald.auth.claims import check_audience, number_of, principal_of
from herald.auth.config import AuthConfig, Introspection
from herald.auth.keys import IssuerKeys
from herald.auth.verifier import InvalidToken, IssuerUnreachable, TokenVerifier
from herald.server.principal import Principal

TIMEOUT: Final = httpx.Timeout(10.0)


def verifier_for(config: AuthConfig, http: httpx.AsyncClient | None = None) -> TokenVerifier:
    """The verifier `config` asks for: introspection when configured, else JWTs."""
    if config.introspection is not None:
        return IntrospectionVerifier(config, config.introspection, http)
    return JwtVerifier(config, http)


class JwtVerifier:
    def __init__(
        self,
        config: AuthConfig,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)
        self._keys = IssuerKeys(config, self._http, clock)

    async def __aenter__(self) -> Self:
        await self._keys.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._keys.__aexit__(*exc_info)
        if self._own_http:
            await self._http.aclose()

    async def verify(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self.config.algorithms:
            raise InvalidToken(f"the token is signed with {algorithm!r}, which this server does not accept")
        key = await self._keys.key(header.get("kid"))
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[algorithm],
                issuer=self.config.issuer,
                leeway=self.config.leeway,
                # `aud` and `sub` are checked as an introspected token's are (`herald.auth.claims`).
                options={"require": ["exp", "iss", "aud"], "verify_aud": False, "verify_sub": False},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken(f"the token was not issued by {self.config.issuer}") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as missing:
            raise InvalidToken(f"the token has no {missing.claim!r} claim") from None
        except jwt.PyJWTError as other:
            raise InvalidToken(f"the token is not valid: {other}") from None
        check_audience(self.config, claims)
        return principal_of(self.config.issuer, claims)


class IntrospectionVerifier:
    """Opaque tokens, asked about at the issuer's introspection endpoint (RFC 7662)."""

    def __init__(
        self, config: AuthConfig, introspection: Introspection, http: httpx.AsyncClient | None
    ) -> None:
        self.config = config
        self.introspection = introspection
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._own_http:
            await self._http.aclose()

    async def verify(self, token: str) -> Principal:
        try:
            response = await self._http.post(
                self.introspection.endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(self.introspection.client_id, self.introspection.client_secret),
            )
            answer = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as failed:
            raise IssuerUnreachable(f"the introspection endpoint did not answer: {failed}") from None
        if not isinstance(answer, dict):
            raise IssuerUnreachable(f"the introspection endpoint answered {response.status_code}")
        if answer.get("active") is not True:
            raise InvalidToken("the token is not active")
        check_audience(self.config, answer)
        if answer.get("iss", self.config.issuer) != self.config.issuer:
            raise InvalidToken(f"the token was not issued by {self.config.issuer}")
        expires = number_of(answer, "exp")
        if expires is not None and expires + self.config.leeway < time.time():
            raise InvalidToken("the token has expired")
        return principal_of(self.config.issuer, answer)
