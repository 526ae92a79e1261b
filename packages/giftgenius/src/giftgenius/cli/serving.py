"""`serve`, `worker` and `store prune`: the long-running processes, and their store.

`serve` stays lean (no rich, no typer work beyond parsing) because its start-up time is
what an MCP host waits for. It binds its port before it says it is serving, so a taken
port, a port it may not use or an address this machine does not have is said at once,
in a line, instead of a banner followed by uvicorn's traceback.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from giftgenius.cli.options import DEFAULT_MAX_BYTES, parse_duration
from herald.cli.checks import ALL_INTERFACES, bind, shown_host, writable
from herald.cli.log_format import LogFormatChoice, LogFormatOption, use_log_format
from herald.cli.problems import UserError
from herald.cli.telemetry import MetricsOption, MetricsPathOption, use_telemetry
from herald.server.files import DownloadPolicy

if TYPE_CHECKING:
    from herald.auth.config import AuthConfig
    from herald.jobs.store import JobStore
    from herald.server.app import Server
    from herald.stores.location import Stores
    from herald.transports.http import HttpConfig
    from herald.wire.writer import MessageLog

#: herald's default worker lease (`herald.runtime.membership.DEFAULT_LEASE_SECONDS`), repeated
#: so that `--help` does not import herald; a test keeps the two equal.
DEFAULT_LEASE_SECONDS = 15.0
#: How long ended jobs are kept by default (`herald.runtime.membership.DEFAULT_RETENTION_SECONDS`).
DEFAULT_RETENTION = "7d"
#: herald's default shutdown grace (`herald.runtime.runner.DEFAULT_SHUTDOWN_GRACE_SECONDS`).
DEFAULT_SHUTDOWN_GRACE_SECONDS = 10.0
#: herald's bound on waiting jobs (`herald.server.app.DEFAULT_MAX_WAITING_JOBS`).
DEFAULT_MAX_WAITING_JOBS = 256

ShutdownGrace = Annotated[
    float,
    typer.Option(
        min=0,
        help="On SIGTERM or Ctrl-C, seconds a job that cannot be resumed may take to finish before "
        "it fails as interrupted; resumable ones (the bulk analysis) go back to the queue at once.",
    ),
]


#: The largest employee file a bulk job downloads, by default (`--max-upload-bytes`).
DEFAULT_MAX_UPLOAD = 50 * 1024 * 1024
MaxUploadOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="The largest attached employee file a bulk job downloads, in bytes. "
        "Plain http and this machine's addresses are fetched only when serving on loopback.",
    ),
]


def serve(
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve one client on stdin/stdout instead of HTTP.")
    ] = False,
    host: Annotated[str, typer.Option(help="Interface to listen on (HTTP).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on (HTTP).")] = 8000,
    store: Annotated[
        str | None,
        typer.Option(
            help="Where jobs and events are kept: sqlite:///relative.db, sqlite:////absolute.db, "
            "a path ending in .db, redis://HOST:PORT/DB or memory. Default: a file in your data dir."
        ),
    ] = None,
    max_message_bytes: Annotated[
        int, typer.Option(min=1, help="Refuse messages larger than this.")
    ] = DEFAULT_MAX_BYTES,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Also accept requests whose Host/Origin names this host (repeat it); loopback always."
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="Let web pages from this origin call the server from a browser (CORS), e.g. "
            "http://localhost:6274 for the MCP Inspector's web UI; repeat it. Off by default."
        ),
    ] = None,
    session_ttl: Annotated[
        float, typer.Option(min=1, help="Close HTTP sessions idle this many seconds.")
    ] = 1800.0,
    widget_domain: Annotated[
        str | None,
        typer.Option(
            help="The origin hosts should give the widget's frame, e.g. https://gifts.example.com "
            "(ChatGPT asks for one when an app is submitted)."
        ),
    ] = None,
    max_running_jobs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Run at most this many jobs at once; later ones wait, pending, in order. "
            "Default: eight per CPU core.",
        ),
    ] = None,
    job_lease: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds this server holds its jobs without renewing its lease. Another server on "
            "the same store fails a killed server's jobs once its lease has lapsed.",
        ),
    ] = DEFAULT_LEASE_SECONDS,
    retention: Annotated[
        str,
        typer.Option(
            help="Forget ended jobs, with their events and results, this long after they ended "
            "(e.g. 7d, 12h, 30m, 90s). An MCP task keeps its own ttl.",
        ),
    ] = DEFAULT_RETENTION,
    shutdown_grace: ShutdownGrace = DEFAULT_SHUTDOWN_GRACE_SECONDS,
    no_worker: Annotated[
        bool,
        typer.Option(
            "--no-worker",
            help="Only serve: queue the jobs clients start, for `giftgenius worker` processes on "
            "the same store to run.",
        ),
    ] = False,
    message_log: Annotated[
        Path | None,
        typer.Option(
            "--message-log",
            help="Record every message in and out to this file (JSON Lines, appended), "
            "for `herald lint` and `herald log view`.",
        ),
    ] = None,
    max_jobs_per_client: Annotated[
        int,
        typer.Option(
            min=0,
            help="Jobs one client (an authenticated user; without tokens, a network address, "
            "whatever its sessions) may have running or waiting at once; one more is refused with a "
            "message saying so. 0: no cap.",
        ),
    ] = 16,
    max_waiting_jobs: Annotated[
        int,
        typer.Option(
            min=0,
            help="Jobs that may wait to run at once, all clients together; one more is refused with a "
            "message saying so. 0: no bound.",
        ),
    ] = DEFAULT_MAX_WAITING_JOBS,
    max_connections: Annotated[
        int, typer.Option(min=1, help="HTTP connections served at once; one more gets 503 and Retry-After.")
    ] = 1000,
    max_streams_per_session: Annotated[
        int, typer.Option(min=1, help="Requests or event streams one HTTP session may have open at once.")
    ] = 32,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a connection has to send a request's headers (408 after).")
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a request has to send its body once its headers are in.")
    ] = 30.0,
    keepalive_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds an idle kept-alive connection stays open.")
    ] = 5.0,
    write_timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds a client may read nothing it is sent before it is dropped."),
    ] = 30.0,
    auth_issuer: Annotated[
        str | None,
        typer.Option(
            help="Ask every HTTP request for an OAuth access token from this authorization server "
            "(its issuer URL); give --auth-audience too.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_audience: Annotated[
        str | None,
        typer.Option(
            help="This server's public URL, e.g. https://gifts.example.com/mcp: the audience its tokens "
            "must be issued for.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_scope: Annotated[
        list[str] | None,
        typer.Option(
            help="A scope every request's token must grant (repeat it).", rich_help_panel="Authentication"
        ),
    ] = None,
    auth_jwks_uri: Annotated[
        str | None,
        typer.Option(
            help="Where the issuer's keys are, if its metadata does not say.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_introspection: Annotated[
        str | None,
        typer.Option(
            help="Check opaque tokens at this introspection endpoint (RFC 7662) instead of as JWTs; "
            "with --auth-client-id and --auth-client-secret.",
            rich_help_panel="Authentication",
        ),
    ] = None,
    auth_client_id: Annotated[
        str | None,
        typer.Option(
            help="This server's client id at the introspection endpoint.", rich_help_panel="Authentication"
        ),
    ] = None,
    auth_client_secret: Annotated[
        str | None,
        typer.Option(
            help="Its client secret; better in the environment variable, out of the process list.",
            envvar="GIFTGENIUS_AUTH_CLIENT_SECRET",
            rich_help_panel="Authentication",
        ),
    ] = None,
    log_format: LogFormatOption = LogFormatChoice.text,
    metrics: MetricsOption = False,
    metrics_path: MetricsPathOption = "/metrics",
    max_upload_bytes: MaxUploadOption = DEFAULT_MAX_UPLOAD,
    quiet: Annotated[bool, typer.Option("--quiet", hidden=True, help="No start-up banner.")] = False,
) -> None:
    """Serve GiftGenius over MCP: Streamable HTTP at http://HOST:PORT/mcp, or stdio."""
    use_log_format(log_format)
    if metrics and stdio:
        raise UserError("--metrics is served on the HTTP server; a stdio server has none")
    retention_seconds = parse_duration(retention, "--retention")
    if message_log is not None:
        writable(message_log, "--message-log")
    if no_worker:
        _require_shared_store(store, "--no-worker")
    auth = _auth_config(
        auth_issuer,
        auth_audience,
        auth_scope or [],
        auth_jwks_uri,
        auth_introspection,
        auth_client_id,
        auth_client_secret,
    )
    if auth is not None and stdio:
        raise UserError("--auth-issuer protects the HTTP endpoint; a stdio server has no tokens to check")
    limits: dict[str, Any] = {
        "auth": auth,
        "max_connections": max_connections,
        "max_streams_per_session": max_streams_per_session,
        "header_timeout": header_timeout,
        "body_timeout": body_timeout,
        "keepalive_timeout": keepalive_timeout,
        "write_timeout": write_timeout,
    }
    served_metrics = use_telemetry("giftgenius", metrics, metrics_path)
    limits["metrics_path"] = served_metrics
    config = (
        None
        if stdio
        else _http_config(max_message_bytes, allow_host or [], cors_origin or [], session_ttl, limits)
    )
    stores = _open_stores(store, sessions=not stdio)
    listening = None if stdio else bind(host, port)
    from giftgenius.app import build_server

    downloads = DownloadPolicy(max_bytes=max_upload_bytes, allow_loopback=host in LOOPBACK)
    server = build_server(widget_domain=widget_domain, downloads=downloads)
    _set_jobs(server, stores.jobs, max_running_jobs, job_lease, retention_seconds, shutdown_grace)
    server.jobs.takes_jobs = not no_worker
    server.max_jobs_per_owner = max_jobs_per_client or None
    server.max_waiting_jobs = max_waiting_jobs or None
    if listening is None or config is None:
        from herald.transports.stdio import run_stdio

        if not quiet:
            print(
                f"giftgenius: serving MCP on stdio (logs on stderr; jobs stored in {stores.where})",
                file=sys.stderr,
            )
        run_stdio(server, max_message_bytes=max_message_bytes, message_log=_open_log(message_log))
        return
    from herald.transports.http import run_http

    url = f"http://{shown_host(host)}:{port}/mcp"
    if not quiet:
        print(f"GiftGenius is serving MCP (Streamable HTTP) at {url}", file=sys.stderr)
        print(f"  events are stored in {stores.where}", file=sys.stderr)
        if served_metrics is not None:
            print(f"  metrics for Prometheus at {url.removesuffix('/mcp')}{served_metrics}", file=sys.stderr)
        if no_worker:
            print("  jobs are queued for `giftgenius worker` processes on that store", file=sys.stderr)
        else:
            print(f"  jobs run here, as worker {server.jobs.worker_id}", file=sys.stderr)
        if host in ALL_INTERFACES and allow_host:
            names = ", ".join(["localhost", *allow_host])
            print(f"  listening on every interface, for clients that reach it as {names}", file=sys.stderr)
        elif host in ALL_INTERFACES:
            print(
                "  listening on every interface: clients that reach it by another name than localhost "
                f"are refused (403) until you name it, e.g. --allow-host {socket.gethostname()} "
                "or --allow-host with the address they use",
                file=sys.stderr,
            )
        if auth is not None:
            print(
                f"  every request needs an access token from {auth.issuer} for {auth.audience}",
                file=sys.stderr,
            )
        elif host not in LOOPBACK:
            print(
                f"  warning: no authentication on {host}: whoever reaches this port can call every tool, "
                "start jobs, and read or cancel any job whose id they learn; add --auth-issuer and "
                "--auth-audience, or serve on 127.0.0.1 behind a proxy that authenticates",
                file=sys.stderr,
            )
        if message_log is not None:
            print(f"  messages are recorded to {message_log.resolve()}", file=sys.stderr)
        print(
            f"  connect a client to {url}, e.g. npx @modelcontextprotocol/inspector",
            file=sys.stderr,
            flush=True,
        )
    run_http(
        server,
        config=config,
        log=stores.log,
        sessions=stores.sessions,
        sock=listening,
        message_log=_open_log(message_log),
    )


#: Addresses that only this machine can reach: no warning about serving without authentication.
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _auth_config(
    issuer: str | None,
    audience: str | None,
    scopes: list[str],
    jwks_uri: str | None,
    introspection: str | None,
    client_id: str | None,
    client_secret: str | None,
) -> AuthConfig | None:
    """The OAuth settings the flags ask for, checked now: a mistake is said before anything starts."""
    from herald.auth.config import AuthConfig, Introspection

    if issuer is None and audience is None:
        if scopes or jwks_uri or introspection:
            raise UserError("--auth-scope, --auth-jwks-uri and --auth-introspection need --auth-issuer")
        return None
    if issuer is None or audience is None:
        raise UserError(
            "--auth-issuer and --auth-audience go together",
            "e.g. --auth-issuer https://login.example.com --auth-audience https://gifts.example.com/mcp",
        )
    checker = None
    if introspection is not None:
        if not client_id or not client_secret:
            raise UserError("--auth-introspection needs --auth-client-id and --auth-client-secret")
        checker = Introspection(introspection, client_id, client_secret)
    try:
        return AuthConfig(
            issuer=issuer,
            audience=audience,
            required_scopes=frozenset(scopes),
            scopes_supported=frozenset({"giftgenius:bulk"}),
            jwks_uri=jwks_uri,
            introspection=checker,
            resource_name="GiftGenius",
        )
    except ValueError as exc:
        raise UserError(f"--auth-{str(exc).replace('_', '-')}") from None


def _open_log(path: Path | None) -> MessageLog | None:
    from herald.wire.writer import MessageLog

    return MessageLog.open(path) if path is not None else None


def _http_config(
    max_message_bytes: int,
    allow_host: list[str],
    cors_origin: list[str],
    session_ttl: float,
    limits: dict[str, Any],
) -> HttpConfig:
    """The HTTP settings, checked before anything is opened: a value herald refuses is said plainly."""
    from herald.transports.http import HttpConfig

    try:
        return HttpConfig(
            max_body_bytes=max_message_bytes,
            allowed_hosts=HttpConfig().allowed_hosts | frozenset(allow_host),
            cors_origins=frozenset(cors_origin),
            session_ttl=session_ttl,
            **limits,
        )
    except ValueError as exc:  # the config's words name its fields; a person typed the flags
        message = str(exc).replace("cors_origins", "--cors-origin").replace("allowed host", "--allow-host")
        raise UserError(message) from None


def worker(
    store: Annotated[
        str | None,
        typer.Option(
            help="The store the servers queue jobs in: a path ending in .db, sqlite:////absolute.db "
            "or redis://HOST:PORT/DB. "
            "Default: the file `serve` uses by default."
        ),
    ] = None,
    max_running_jobs: Annotated[
        int | None,
        typer.Option(min=1, help="Run at most this many jobs at once. Default: eight per CPU core."),
    ] = None,
    job_lease: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds this worker holds its jobs without renewing its lease; after that another "
            "worker takes them over.",
        ),
    ] = DEFAULT_LEASE_SECONDS,
    retention: Annotated[
        str, typer.Option(help="Forget ended jobs this long after they ended (e.g. 7d, 12h).")
    ] = DEFAULT_RETENTION,
    shutdown_grace: ShutdownGrace = DEFAULT_SHUTDOWN_GRACE_SECONDS,
    log_format: LogFormatOption = LogFormatChoice.text,
    probe_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=65535,
            help="Answer /healthz and /readyz (and /metrics with --metrics) on this port, for an "
            "orchestrator's probes and Prometheus.",
            rich_help_panel="Telemetry",
        ),
    ] = None,
    probe_host: Annotated[
        str, typer.Option(help="The interface --probe-port listens on.", rich_help_panel="Telemetry")
    ] = "127.0.0.1",
    metrics: MetricsOption = False,
    metrics_path: MetricsPathOption = "/metrics",
    max_upload_bytes: MaxUploadOption = DEFAULT_MAX_UPLOAD,
    quiet: Annotated[bool, typer.Option("--quiet", hidden=True, help="No start-up banner.")] = False,
) -> None:
    """Run GiftGenius jobs that `serve` processes queue in a shared store, until stopped (Ctrl-C)."""
    use_log_format(log_format)
    if metrics and probe_port is None:
        raise UserError("--metrics is served on --probe-port", "e.g. --probe-port 9464 --metrics")
    served_metrics = use_telemetry("giftgenius-worker", metrics, metrics_path)
    probes = bind(probe_host, probe_port, flags=("--probe-host", "--probe-port")) if probe_port else None
    retention_seconds = parse_duration(retention, "--retention")
    _require_shared_store(store, "worker")
    from giftgenius.app import build_server

    stores = _open_stores(store, sessions=False)
    server = build_server(downloads=DownloadPolicy(max_bytes=max_upload_bytes))
    _set_jobs(server, stores.jobs, max_running_jobs, job_lease, retention_seconds, shutdown_grace)
    if not quiet:
        worker_id = server.jobs.worker_id
        print(
            f"giftgenius worker {worker_id}: running the jobs queued in {stores.where} (Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
    from herald.worker import run_worker

    run_worker(server, probes, served_metrics)  # it closes the job store
    asyncio.run(_close(stores, jobs=False))


def _require_shared_store(store: str | None, what: str) -> None:
    """A worker and a serve-only replica meet in a store both can open; memory is no such place."""
    if store == "memory":
        raise typer.BadParameter(
            f"{what} needs a store that other processes share: --store PATH.db or "
            "--store redis://HOST:PORT/DB",
            param_hint="--store",
        )


def _require_existing_file(store: str | None) -> None:
    """Pruning a SQLite file that is not there would create an empty store, and forget nothing."""
    from herald.stores.location import default_store_path

    path = default_store_path("giftgenius") if store is None else _named_sqlite_file(store)
    if path is not None and not path.is_file():
        raise UserError(f"there is no store at {path}", "Name the file a server was started with (--store).")


def _named_sqlite_file(store: str) -> Path | None:
    """The SQLite file `--store` names; None for memory and Redis."""
    from herald.stores.location import sqlite_path

    if store == "memory" or store.startswith(("redis://", "rediss://")):
        return None
    try:
        return sqlite_path(store)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--store") from None


store_app = typer.Typer(no_args_is_help=True, help="Look after the store where jobs and events are kept.")


@store_app.command("prune")
def store_prune(
    store: Annotated[
        str | None,
        typer.Option(
            help="The store: a path ending in .db (or sqlite:///…). Default: the file `serve` uses."
        ),
    ] = None,
    retention: Annotated[
        str, typer.Option(help="Forget jobs that ended longer ago than this (e.g. 7d, 12h, 30m).")
    ] = DEFAULT_RETENTION,
) -> None:
    """Forget jobs that ended longer ago than the retention, with their events and results.

    A running server does this by itself every hour; this is for a store no server is
    running on, or to free room at once.
    """
    seconds = parse_duration(retention, "--retention")
    _require_existing_file(store)
    stores = _open_stores(store, sessions=False)

    async def prune() -> list[str]:
        try:
            return await stores.jobs.prune(time.time(), seconds)
        finally:
            await _close(stores)

    gone = asyncio.run(prune())
    print(f"forgot {len(gone)} job(s) that ended more than {retention} ago ({stores.where})")


async def _close(stores: Stores, *, jobs: bool = True) -> None:
    if jobs:
        await stores.jobs.aclose()
    await stores.log.aclose()
    if stores.sessions is not None:
        await stores.sessions.aclose()


def _set_jobs(
    server: Server, store: JobStore, max_running: int | None, lease: float, retention: float, grace: float
) -> None:
    """Where `serve` and `worker` keep jobs, and the job flags they share."""
    server.use_job_store(store)
    jobs = server.jobs
    jobs.max_running = max_running
    jobs.lease_seconds = lease
    jobs.retention_seconds = retention
    jobs.shutdown_grace_seconds = grace


def _open_stores(store: str | None, *, sessions: bool = True) -> Stores:
    """The stores `--store` names; a URL herald cannot use, a file in a folder that does not
    exist, or a Redis that does not answer, is said plainly instead of ending in a traceback
    (or a new folder) at start-up."""
    from herald.stores.errors import StoreError
    from herald.stores.location import open_stores

    named = None if store is None else _named_sqlite_file(store)
    if named is not None:
        # SQLite would create the folders of a mistyped path; only the default one is made.
        writable(named, "--store")
    try:
        opened = open_stores(store, app_name="giftgenius", sessions=sessions)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--store") from None
    except (StoreError, OSError) as exc:
        raise typer.BadParameter(f"cannot open the store {store}: {exc}", param_hint="--store") from None
    if store is not None and store.startswith(("redis://", "rediss://")):
        import redis

        try:
            redis.Redis.from_url(store, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            raise typer.BadParameter(
                f"cannot reach Redis at {opened.where}: {exc}", param_hint="--store"
            ) from None
    return opened
