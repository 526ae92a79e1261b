"""Streamable HTTP for both protocol eras: a Starlette app, served by uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from types import FrameType
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, Router

from herald.auth.config import AuthConfig
from herald.auth.resource import WELL_KNOWN, metadata, metadata_path
from herald.extras import needs
from herald.protocol.hosts import HostAllowList
from herald.server.app import Server
from herald.stores.eventlog import EventLog
from herald.stores.memory import MemoryEventLog
from herald.stores.sessions import SessionStore
from herald.transports.http.auth import Gate
from herald.transports.http.config import HttpConfig
from herald.transports.http.endpoint import MCPEndpoint
from herald.transports.http.health import health_routes
from herald.transports.http.metrics import metrics_route
from herald.transports.http.page import FrontDoor
from herald.transports.http.relay import ReplicaRelay
from herald.transports.http.sessions import SessionRegistry
from herald.wire.asgi import RecordingMiddleware
from herald.wire.format import recorder_name
from herald.wire.writer import Flushing, MessageLog

if TYPE_CHECKING:
    import uvicorn

__all__ = ["HttpConfig", "McpApp", "create_app", "run_http", "uvicorn_settings"]


class McpApp(Starlette):
    """herald's ASGI app: a Starlette app whose `lifespan` a host app can run as its own."""

    @property
    def lifespan(self) -> Callable[[Any], AbstractAsyncContextManager[Any]]:
        """Starts and stops what the endpoint needs (the server's lifespan, jobs, sessions).

        `FastAPI(lifespan=mcp_app.lifespan)` runs it for a mounted app, as does
        `async with mcp_app.lifespan(app): ...` inside a lifespan of the host's own.
        """
        return self.router.lifespan_context


def create_app(
    server: Server,
    config: HttpConfig | None = None,
    log: EventLog | None = None,
    sessions: SessionStore | None = None,
    message_log: MessageLog | None = None,
) -> McpApp:
    """The ASGI app serving `server` at `config.path` (with or without a trailing slash); add routes
    of your own as with any Starlette app.

    With `message_log`, every HTTP exchange is recorded as it passes (`herald.wire`); the
    app closes the log when it stops.

    Replicas that share `log` and `sessions` (and the server's job store) serve each
    other's handshake-era sessions: a load balancer may send any request to any of them.
    Through `sessions` they also pass each other the notifications they send, and share
    the key that seals `requestState` (see `herald.transports.http.relay`).
    """
    config = config or HttpConfig()
    event_log: EventLog = log if log is not None else MemoryEventLog()
    registry = SessionRegistry(
        server,
        event_log,
        ttl=config.session_ttl,
        max_message_bytes=config.max_body_bytes,
        store=sessions,
    )
    gate: Gate | None = None
    if config.auth is not None:
        with needs("auth", "a server that asks for access tokens"):
            from herald.auth.tokens import verifier_for  # PyJWT and httpx

        gate = Gate(config.auth, verifier_for(config.auth))
        server.scopes.every_request = config.auth.required_scopes
        server.scopes.challenge = gate.challenge
    endpoint = MCPEndpoint(server, config, registry, event_log, gate)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with server.running(), contextlib.AsyncExitStack() as stack:
                if message_log is not None:
                    message_log.start("http", recorder_name(), f"{server.name} (its own --message-log)")
                    stack.callback(message_log.close)
                    await stack.enter_async_context(Flushing(message_log))
                if gate is not None:  # its connections to the issuer, and key fetches under way
                    await stack.enter_async_context(gate.verifier)
                await stack.enter_async_context(registry)  # every session, the expiry sweep
                if sessions is not None:
                    await stack.enter_async_context(ReplicaRelay(server, sessions, registry).running())
                yield
        finally:
            await event_log.aclose()

    routes = [
        Route(path, endpoint, methods=["GET", "POST", "DELETE"]) for path in endpoint_paths(config.path)
    ]
    routes += health_routes(server)
    if config.metrics_path is not None:
        routes.append(metrics_route(config.metrics_path))
    if config.auth is not None:
        routes += metadata_routes(config.auth)
    app = McpApp(
        routes=routes,
        middleware=[
            *([Middleware(RecordingMiddleware, log=message_log)] if message_log is not None else []),
            _cors(config, endpoint.hosts),
        ],
        lifespan=lifespan,
    )
    # Consulted only where no route matches, so a route of your own at `/` comes first.
    not_found = app.router.default
    app.router.default = Router(
        [Route("/", FrontDoor(endpoint, not_found))], default=not_found, redirect_slashes=False
    )
    app.state.sessions = registry
    return app


def endpoint_paths(path: str) -> list[str]:
    """The endpoint's path, with and without a trailing slash, both served alike.

    Starlette would answer the other spelling with a 307 to this one, and a client that
    does not follow redirects (or follows a POST's as a GET) would lose its message.
    """
    bare = path.rstrip("/")
    return list(dict.fromkeys([path, bare or "/", bare + "/"]))


def metadata_routes(auth: AuthConfig) -> list[Route]:
    """The protected resource metadata (RFC 9728), at the well-known path and at the one with the
    resource's own path appended, which clients of the 2025-11-25 revision try first."""
    document = metadata(auth)

    async def serve_metadata(request: Request) -> JSONResponse:
        return JSONResponse(document, headers={"cache-control": "public, max-age=3600"})

    paths = dict.fromkeys([metadata_path(auth), WELL_KNOWN])
    return [Route(path, serve_metadata, methods=["GET"]) for path in paths]


def _cors(config: HttpConfig, hosts: HostAllowList) -> Middleware:
    """CORS for the pages `check_host_and_origin` admits: those on an allowed host, and `cors_origins`.

    Starlette's middleware fits: it answers preflights before routing, adds its headers to
    the start of every response (errors and SSE streams alike, whatever follows), and
    gives an origin it does not admit no `Access-Control-Allow-Origin`, so the browser
    keeps the answer from the page, while the endpoint refuses the request itself (403).
    Requested headers are mirrored because the 2026-07-28 era sends headers named after
    each tool's parameters (`Mcp-Param-*`) besides `Mcp-Method` and `Mcp-Name`. A listed
    origin may be a public site calling a server on this machine: the browser then asks
    (Private Network Access) whether that is allowed, and listing the origin says yes.
    """
    return Middleware(
        CORSMiddleware,
        allow_origin_regex=hosts.cors_pattern(),
        allow_origins=sorted(config.cors_origins),
        allow_methods=["GET", "POST", "DELETE"],
        allow_headers=["*"],
        allow_private_network=True,
        expose_headers=["Mcp-Session-Id", "MCP-Protocol-Version"],
        max_age=600,
    )


def run_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: HttpConfig | None = None,
    log: EventLog | None = None,
    sessions: SessionStore | None = None,
    sock: socket.socket | None = None,
    message_log: MessageLog | None = None,
) -> None:
    """Serve until interrupted, on uvloop and httptools where installed.

    Pass `sock`, a socket already bound and listening, to learn of a taken port before
    saying anything (`host` and `port` are then not used): uvicorn would only log it.
    """
    import gc

    import uvicorn

    app = create_app(server, config, log, sessions, message_log)
    gc.freeze()  # everything loaded so far lives as long as the process
    settings = uvicorn.Config(app, **uvicorn_settings(config or HttpConfig(), host=host, port=port))
    served = uvicorn.Server(settings)
    logging.getLogger("uvicorn.error").addFilter(_StreamsEndedAtShutdown(served))
    stop = served.handle_exit

    def draining(sig: int, frame: FrameType | None) -> None:  # `/readyz` says 503 from the first signal on
        server.draining = True
        stop(sig, frame)

    served.handle_exit = draining  # type: ignore[method-assign]
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person stops it
        served.run(sockets=[sock] if sock is not None else None)
    if not served.started:
        raise SystemExit(3)  # start-up failed (the lifespan, say): uvicorn has logged why


def uvicorn_settings(config: HttpConfig, *, host: str, port: int) -> dict[str, Any]:
    """What uvicorn is told: quiet logs, the lifespan, and the connection limits of `config`."""
    from herald.transports.http.protocol import ConnectionLimits, guarded_protocol  # imports uvicorn

    limits = ConnectionLimits(
        config.header_timeout, config.body_timeout, config.max_connections, config.write_timeout
    )
    return {
        "host": host,
        "port": port,
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
        # Open event streams never end by themselves: without a bound, SIGTERM would wait for them.
        "timeout_graceful_shutdown": config.shutdown_timeout,
        "timeout_keep_alive": config.keepalive_timeout,
        "http": guarded_protocol(limits),
    }


class _StreamsEndedAtShutdown(logging.Filter):
    """Drops uvicorn's traceback for a stream it cancelled at shutdown, which is how it should end.

    An event stream never ends by itself, so once `shutdown_timeout` has passed uvicorn
    cancels it, says so in a line, and then logs the cancellation as "Exception in ASGI
    application" with a traceback: a person who pressed Ctrl-C with a client connected
    would see a crash where there was none. Only that record, and only while the server
    is stopping, is dropped.
    """

    def __init__(self, server: uvicorn.Server) -> None:
        super().__init__()
        self._server = server

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (self._server.should_exit and isinstance(error, asyncio.CancelledError))
