"""`herald.Server`: a server definition that can serve itself, in one call.

`herald.server.Server` declares what a server offers and knows no transport (the
transports import it, never the other way round). The `Server` people import from
`herald` is that class with the two ways to serve it added on top: `run()` (stdio, or
`run("http")`) and `http_app()` (an ASGI app to mount in FastAPI or Starlette). It is the
same server in every other respect, so anything that takes a `herald.server.Server`
takes it too.

What `giftgenius serve` does for its app, these do for any server: pick where jobs are
kept and say so, then hand the server to a transport. Jobs are durable by default, the
point of herald's jobs: a server with job tools keeps them in a SQLite file in the
user's data directory, in a folder named after the server, unless told otherwise
(`store="memory"`, `"redis://…"`, a path), or unless it was given a job store itself
(`use_job_store`). A server without jobs opens no file.

The transports and stores are imported when a server is served, so that declaring one
imports neither uvicorn nor Starlette.
"""

from __future__ import annotations

import re
import socket
import sys
from typing import TYPE_CHECKING, Literal

from herald.server.app import Server as ServerDefinition

if TYPE_CHECKING:
    from herald.stores.location import Stores
    from herald.transports.http import McpApp
    from herald.transports.http.config import HttpConfig

__all__ = ["Server", "folder_name", "http_app", "serve_http", "serve_stdio", "stores_for"]

Transport = Literal["stdio", "http"]


class Server(ServerDefinition):
    """An MCP server definition (`herald.server.Server`) that can also serve itself."""

    def run(
        self,
        transport: Transport = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        store: str | None = None,
        config: HttpConfig | None = None,
        quiet: bool = False,
    ) -> None:
        """Serve on stdin/stdout until the client leaves, or Streamable HTTP at
        `http://host:port/path` until the process is stopped.

        Jobs are kept where `store` (or `Server(store=...)`) says: a SQLite file in the
        user's data directory unless told otherwise, `"memory"` included; the place is
        printed on stderr at start unless `quiet`. `config` sets the rest of HTTP
        (`HttpConfig`).
        """
        if transport == "stdio":
            serve_stdio(self, store=store, quiet=quiet)
        elif transport == "http":
            serve_http(self, host=host, port=port, path=path, store=store, config=config, quiet=quiet)
        else:
            raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")

    def http_app(
        self, path: str = "/mcp", *, store: str | None = None, config: HttpConfig | None = None
    ) -> McpApp:
        """An ASGI app serving this server at `path`, to run or to mount in another app.

        Its `lifespan` must run for jobs, sessions and the server's own lifespan to start:
        `FastAPI(lifespan=mcp_app.lifespan)` then `app.mount("/", mcp_app)`, or entered
        inside a lifespan of the host app's own (`async with mcp_app.lifespan(app): yield`).
        Starlette and FastAPI do not run a mounted app's lifespan themselves; without it,
        requests are answered 503 and the log says why. Jobs are kept as `run` keeps them.
        """
        return http_app(self, path=path, store=store, config=config)


def http_app(
    server: ServerDefinition,
    *,
    path: str = "/mcp",
    store: str | None = None,
    config: HttpConfig | None = None,
) -> McpApp:
    """The ASGI app of `server` (see `Server.http_app`), its jobs kept where `store` says."""
    from herald.transports.http import HttpConfig, create_app

    stores = stores_for(server, store, sessions=True)
    telemetry_from_environment(server)
    return create_app(
        server,
        config or HttpConfig(path=path),
        log=None if stores is None else stores.log,
        sessions=None if stores is None else stores.sessions,
    )


def serve_stdio(server: ServerDefinition, *, store: str | None = None, quiet: bool = False) -> None:
    """Serve `server` on stdin/stdout, its jobs kept where `store` says (see `Server.run`)."""
    from herald.transports.stdio import run_stdio

    stores = stores_for(server, store, sessions=False)
    telemetry_from_environment(server)
    if stores is not None and not quiet:
        print(f"{server.name}: jobs are kept in {stores.where}", file=sys.stderr)
    run_stdio(server)


def serve_http(
    server: ServerDefinition,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    store: str | None = None,
    config: HttpConfig | None = None,
    sock: socket.socket | None = None,
    quiet: bool = False,
) -> None:
    """Serve `server` over Streamable HTTP (see `Server.run`); on `sock` when given, a socket
    already listening, so that a taken port is known before anything is said."""
    from herald.transports.http import HttpConfig, run_http

    stores = stores_for(server, store, sessions=True)
    telemetry_from_environment(server)
    settings = config or HttpConfig(path=path)
    if not quiet:
        if stores is not None:
            print(f"{server.name}: jobs are kept in {stores.where}", file=sys.stderr)
        print(f"{server.name}: serving MCP at http://{host}:{port}{settings.path}", file=sys.stderr)
    run_http(
        server,
        host=host,
        port=port,
        config=settings,
        log=None if stores is None else stores.log,
        sessions=None if stores is None else stores.sessions,
        sock=sock,
    )


def telemetry_from_environment(server: ServerDefinition) -> None:
    """Traces and metrics as the `OTEL_*` variables ask, named after the server, unless
    telemetry is on already (the command line, or the application, turned it on)."""
    import herald.telemetry

    if herald.telemetry.active is None:
        herald.telemetry.from_environment(server.name)


def stores_for(server: ServerDefinition, store: str | None, *, sessions: bool) -> Stores | None:
    """Where `server` keeps its jobs (and, on HTTP, its streams and sessions); None when it
    keeps them itself: no jobs and no store asked for, or a job store it was given."""
    from herald.stores.location import open_stores

    url = store if store is not None else server.store
    if url is None and (server.job_store_chosen or not server.jobs.in_use):
        return None
    stores = open_stores(url, app_name=folder_name(server.name), sessions=sessions)
    if not server.job_store_chosen:
        server.use_job_store(stores.jobs)
    return stores


def folder_name(server_name: str) -> str:
    """The data folder of a server: its name, in characters every file system takes."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", server_name).strip("-.") or "herald-server"
