"""Access tokens checked: JWTs against the issuer's keys, or opaque ones by introspection.

A token is accepted only when its signature is the issuer's (a key of its JWKS, with an
algorithm on the allow list: never `none`, never an HMAC made with a public key), it was
issued by the configured issuer, for this server (`aud`, RFC 8707), and it is within its
lifetime (`exp`, `nbf`, with a small leeway). Every refusal says why, for the
`WWW-Authenticate` challenge. The issuer's keys are fetched with its metadata (RFC 8414),
kept for `keys_ttl`, and fetched again early when a token names a key not seen yet (a key
rotation), at most once per `KEY_REFRESH_COOLDOWN`, so forged key ids cannot make the
server hammer the issuer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
import jwt

from herald.auth.config import AuthConfig, Introspection
from herald.auth.verifier import InvalidToken, IssuerUnreachable, TokenVerifier
from herald.server.principal import Principal

KEY_REFRESH_COOLDOWN: Final = 30.0
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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)
        self._clock = clock
        self._keys: jwt.PyJWKSet | None = None
        self._fetched_at = -1e18
        self._fetching = asyncio.Lock()

    async def aclose(self) -> None:
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
        key = await self._key(header.get("kid"))
        audience = self.config.canonical_audience
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[algorithm],
                audience=[audience, audience + "/"],
                issuer=self.config.issuer,
                leeway=self.config.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken(f"the token was issued for another resource, not {audience}") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken(f"the token was not issued by {self.config.issuer}") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as missing:
            raise InvalidToken(f"the token has no {missing.claim!r} claim") from None
        except jwt.PyJWTError as other:
            raise InvalidToken(f"the token is not valid: {other}") from None
        return principal_of(self.config.issuer, claims)

    async def _key(self, key_id: Any) -> jwt.PyJWK:
        keys = await self._key_set(refresh=False)
        found = _find(keys, key_id)
        if found is None and self._clock() - self._fetched_at >= KEY_REFRESH_COOLDOWN:
            found = _find(await self._key_set(refresh=True), key_id)  # the issuer may have rotated keys
        if found is None:
            raise InvalidToken(f"the token names key {key_id!r}, which the issuer does not publish")
        return found

    async def _key_set(self, *, refresh: bool) -> jwt.PyJWKSet:
        async with self._fetching:
            stale = self._clock() - self._fetched_at >= self.config.keys_ttl
            if self._keys is None or stale or refresh:
                uri = self.config.jwks_uri or await self._discover_jwks_uri()
                document = await _get_json(self._http, uri)
                try:
                    self._keys = jwt.PyJWKSet.from_dict(document)
                except jwt.PyJWTError as bad:
                    raise IssuerUnreachable(f"the issuer's keys at {uri} are not a key set: {bad}") from None
                self._fetched_at = self._clock()
            return self._keys

    async def _discover_jwks_uri(self) -> str:
        for url in metadata_urls(self.config.issuer):
            try:
                document = await _get_json(self._http, url)
            except IssuerUnreachable:
                continue
            if document.get("issuer") == self.config.issuer and isinstance(document.get("jwks_uri"), str):
                return str(document["jwks_uri"])
        raise IssuerUnreachable(f"no metadata with a jwks_uri for {self.config.issuer}")


class IntrospectionVerifier:
    """Opaque tokens, asked about at the issuer's introspection endpoint (RFC 7662)."""

    def __init__(
        self, config: AuthConfig, introspection: Introspection, http: httpx.AsyncClient | None
    ) -> None:
        self.config = config
        self.introspection = introspection
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)

    async def aclose(self) -> None:
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
        audiences = answer.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences or []
        wanted = self.config.canonical_audience
        if wanted not in (str(each).rstrip("/") for each in audiences):
            raise InvalidToken(f"the token was issued for another resource, not {wanted}")
        if answer.get("iss", self.config.issuer) != self.config.issuer:
            raise InvalidToken(f"the token was not issued by {self.config.issuer}")
        expires = answer.get("exp")
        if isinstance(expires, int | float) and expires + self.config.leeway < time.time():
            raise InvalidToken("the token has expired")
        return principal_of(self.config.issuer, answer)


def principal_of(issuer: str, claims: Mapping[str, Any]) -> Principal:
    """Who the claims name (`sub`, else the client's id) and the scopes they grant."""
    subject = claims.get("sub") or claims.get("client_id")
    if not isinstance(subject, str) or not subject:
        raise InvalidToken("the token names no subject ('sub') or client ('client_id')")
    granted = claims.get("scope", claims.get("scp", ""))
    scopes = granted.split() if isinstance(granted, str) else [str(each) for each in granted or []]
    return Principal(issuer, subject, frozenset(scopes))


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be (RFC 8414 §3 inserts the well-known part before the path)."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]


async def _get_json(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    try:
        response = await http.get(url)
        document = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as failed:
        raise IssuerUnreachable(f"{url} did not answer: {failed}") from None
    if not isinstance(document, dict):
        raise IssuerUnreachable(f"{url} answered {response.status_code}, not a JSON object")
    return document


def _find(keys: jwt.PyJWKSet, key_id: Any) -> jwt.PyJWK | None:
    if key_id is None:
        return keys.keys[0] if len(keys.keys) == 1 else None  # one key: a token may omit `kid`
    return next((key for key in keys.keys if key.key_id == key_id), None)
