"""`herald run FILE[:NAME]`: serve any herald server file, over stdio or HTTP.

The file is the developer's (`herald.cli.loading`); the serving is `Server.run`'s, with
the same defaults: jobs durable in a SQLite file named after the server, said on stderr.
`--reload` restarts an HTTP server when a file under the server's folder changes (a
stdio client's conversation cannot outlive a restart, so it needs `--http`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Annotated

import typer

from herald.cli.checks import bind
from herald.cli.loading import load_server, server_file
from herald.cli.log_format import LogFormatChoice, LogFormatOption, use_log_format
from herald.cli.problems import UserError
from herald.cli.telemetry import MetricsOption, MetricsPathOption, use_telemetry

if TYPE_CHECKING:
    from herald.transports.http import HttpConfig

__all__ = ["allowed_hosts", "run"]

#: What the reloading app factory is told of the server to load (`herald.cli.reloading`).
RELOAD_TARGET, RELOAD_PATH, RELOAD_STORE = "HERALD_RUN_TARGET", "HERALD_RUN_PATH", "HERALD_RUN_STORE"
RELOAD_HOSTS = "HERALD_RUN_ALLOWED_HOSTS"


def run(
    target: Annotated[str, typer.Argument(metavar="FILE[:NAME]", help="The server file, e.g. server.py")],
    http: Annotated[bool, typer.Option("--http", help="Serve Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="With --http: the interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="With --http: the port.")] = 8000,
    path: Annotated[str, typer.Option(help="With --http: the endpoint's path.")] = "/mcp",
    store: Annotated[
        str | None,
        typer.Option(
            help="Where jobs are kept: a .db path, sqlite:///PATH, redis://HOST:PORT/DB or memory. "
            "Default: a SQLite file in your data folder, named after the server."
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="With --http: a host name clients may use besides loopback (a tunnel's, a "
            "deployment's); repeat it. Others are refused, against DNS rebinding."
        ),
    ] = None,
    reload: Annotated[bool, typer.Option(help="With --http: restart when a file changes.")] = False,
    log_format: LogFormatOption = LogFormatChoice.text,
    metrics: MetricsOption = False,
    metrics_path: MetricsPathOption = "/metrics",
    quiet: Annotated[bool, typer.Option(help="Say nothing at start.")] = False,
    no_worker: Annotated[bool, typer.Option("--no-worker", hidden=True)] = False,
) -> None:
    """Serve the herald server in FILE (the one Server in it, or the one NAME names)."""
    file = server_file(target)
    use_log_format(log_format)
    if reload and not http:
        raise UserError(
            "--reload needs --http", "A stdio client's conversation cannot outlive a restart of its server."
        )
    if not path.startswith("/"):
        raise UserError(f"--path {path!r} must start with /", "e.g. --path /mcp")
    checked_store(store)
    if metrics and not http:
        raise UserError("--metrics needs --http", "Prometheus scrapes an HTTP server; stdio has none.")
    if metrics and reload:
        raise UserError(
            "--metrics does not work with --reload", "Leave --reload out where Prometheus scrapes."
        )
    if allow_host:
        os.environ[RELOAD_HOSTS] = ",".join(allow_host)
    config = _config(path)  # a host name that could never match is said now
    server = load_server(file)  # a mistake in the file is said now, reloading or not
    served_metrics = use_telemetry(server.name, metrics, metrics_path)
    if served_metrics is not None:
        config = dataclasses.replace(config, metrics_path=served_metrics)
    if reload:
        _run_reloading(str(file), host, port, path, store)
        return
    from herald.launch import serve_http, serve_stdio

    if no_worker:
        server.jobs.takes_jobs = False
    if http:
        listening = bind(host, port)
        serve_http(server, host=host, port=port, store=store, config=config, sock=listening, quiet=quiet)
    else:
        serve_stdio(server, store=store, quiet=quiet)


def allowed_hosts() -> frozenset[str]:
    """Loopback, and the names `--allow-host` gave (passed on to a reloaded process too)."""
    from herald.protocol.hosts import LOOPBACK_HOSTS

    given = [name.strip() for name in os.environ.get(RELOAD_HOSTS, "").split(",") if name.strip()]
    return LOOPBACK_HOSTS | frozenset(given)


def _config(path: str) -> HttpConfig:
    from herald.transports.http import HttpConfig

    try:
        return HttpConfig(path=path, allowed_hosts=allowed_hosts())
    except ValueError as exc:
        raise UserError(f"--allow-host: {exc}") from None


def checked_store(store: str | None) -> None:
    """A `--store` herald can open, said now rather than as a traceback at start-up."""
    if store is None or store == "memory" or store.startswith(("redis://", "rediss://")):
        return
    from herald.stores.location import sqlite_path

    try:
        sqlite_path(store)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _run_reloading(target: str, host: str, port: int, path: str, store: str | None) -> None:
    import uvicorn

    bind(host, port).close()  # a taken port is said now, not logged by the reloader
    os.environ[RELOAD_TARGET], os.environ[RELOAD_PATH] = target, path
    if store is not None:
        os.environ[RELOAD_STORE] = store
    folder = str(server_file(target).path.parent)
    uvicorn.run(
        "herald.cli.reloading:app",
        factory=True,
        reload=True,
        reload_dirs=[folder],
        host=host,
        port=port,
        log_level="warning",
    )
