"""A small OAuth 2.1 authorization server for the tests, built on PyJWT and cryptography.

It publishes its metadata (RFC 8414) and keys (JWKS), and issues RS256 JWT access tokens
to registered clients by the client_credentials grant, with the audience the request's
`resource` names (RFC 8707) and the scopes asked for that the client may have. `mint`
makes tokens the tests need to be refused: expired, for another audience, from another
issuer, signed with another key, without a scope, unsigned (`alg: none`). `hang()` makes
it an issuer that is up but stuck: it takes every request and answers none, until
`answer()`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from herald.testing import free_port


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Client:
    secret: str
    scopes: frozenset[str]


@dataclass
class Issuer:
    """The authorization server; `url` is its issuer once `serving()` has started it."""

    port: int = field(default_factory=free_port)
    key: rsa.RSAPrivateKey = field(default_factory=new_key)
    key_id: str = "key-1"
    clients: dict[str, Client] = field(default_factory=dict)
    #: How many times its keys were fetched (a verifier must cache them).
    jwks_fetches: int = 0
    #: How many requests it has taken, answered or not.
    requests: int = 0
    _answering: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._answering.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hang(self) -> None:
        """Take requests and answer none, as an issuer stuck behind its load balancer would."""
        self._answering.clear()

    def answer(self) -> None:
        """Answer again, the requests held as well."""
        self._answering.set()

    def register(self, client_id: str, secret: str, scopes: set[str]) -> None:
        self.clients[client_id] = Client(secret, frozenset(scopes))

    def _client(self, request: Request, form: Any) -> tuple[str | None, Client | None]:
        """The client the request authenticates as (Basic or form credentials); None if none does."""
        client_id, secret = _client_credentials(request, form)
        client = self.clients.get(client_id or "")
        return client_id, client if client is not None and client.secret == secret else None

    def mint(
        self,
        *,
        audience: str,
        subject: str = "someone",
        scopes: set[str] | frozenset[str] = frozenset(),
        lifetime: float = 300,
        issuer: str | None = None,
        key: rsa.RSAPrivateKey | None = None,
        algorithm: str = "RS256",
        key_id: str | None = None,
        **claims: Any,
    ) -> str:
        now = time.time()
        payload = {
            "iss": issuer or self.url,
            "sub": subject,
            "aud": audience,
            "iat": int(now),
            "exp": int(now + lifetime),
            "jti": uuid.uuid4().hex,
            "scope": " ".join(sorted(scopes)),
            **claims,
        }
        if algorithm == "none":
            return _unsigned(payload)
        return jwt.encode(
            payload, key or self.key, algorithm=algorithm, headers={"kid": key_id or self.key_id}
        )

    # -- the endpoints ---------------------------------------------------------------------------

    def app(self) -> ASGIApp:
        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse(
                {
                    "issuer": self.url,
                    "authorization_endpoint": f"{self.url}/authorize",
                    "token_endpoint": f"{self.url}/token",
                    "jwks_uri": f"{self.url}/jwks",
                    "grant_types_supported": ["client_credentials"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                }
            )

        async def jwks(request: Request) -> JSONResponse:
            self.jwks_fetches += 1
            public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
            return JSONResponse({"keys": [public | {"kid": self.key_id, "alg": "RS256", "use": "sig"}]})

        async def token(request: Request) -> JSONResponse:
            form = await request.form()
            client_id, client = self._client(request, form)
            if client is None:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            if form.get("grant_type") != "client_credentials":
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            resource = form.get("resource")
            if not isinstance(resource, str):
                return JSONResponse(
                    {"error": "invalid_target", "error_description": "name the resource"}, 400
                )
            asked = set(str(form.get("scope") or "").split()) or set(client.scopes)
            granted = asked & client.scopes
            access = self.mint(
                audience=resource, subject=client_id or "", scopes=granted, client_id=client_id
            )
            answer = {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": 300,
                "scope": " ".join(sorted(granted)),
            }
            return JSONResponse(answer)

        async def introspect(request: Request) -> JSONResponse:
            """RFC 7662: what a token is, for a registered resource server that asks."""
            form = await request.form()
            if self._client(request, form)[1] is None:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            try:
                claims = jwt.decode(
                    str(form.get("token")),
                    self.key.public_key(),
                    algorithms=["RS256"],
                    options={"verify_aud": False},
                )
            except jwt.PyJWTError:
                return JSONResponse({"active": False})
            return JSONResponse({"active": True, **claims})

        endpoints = Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/jwks", jwks),
                Route("/token", token, methods=["POST"]),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.requests += 1
                await self._answering.wait()
            await endpoints(scope, receive, send)

        return app

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Issuer]:
        """Serve it on its port in the running loop until the block ends."""
        config = uvicorn.Config(
            self.app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve())
        try:
            async with asyncio.timeout(10):
                while not server.started:  # noqa: ASYNC110  # uvicorn offers readiness only as a flag
                    await asyncio.sleep(0.01)
            yield self
        finally:
            self.answer()  # a held request would keep it from stopping
            server.should_exit = True
            await asyncio.wait_for(task, 10)


def _client_credentials(request: Request, form: Any) -> tuple[str | None, str | None]:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        from urllib.parse import unquote

        decoded = base64.b64decode(header[6:]).decode()
        client_id, _, secret = decoded.partition(":")
        return unquote(client_id), unquote(secret)
    return form.get("client_id"), form.get("client_secret")


def _unsigned(payload: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        import json

        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(payload)}."
