"""The `giftgenius` command: serve the app, or call one of its tools as a client would.

`serve` stays lean (no rich, no typer work beyond parsing) because its start-up time is
what an MCP host waits for. `call` spawns a server, speaks MCP to it over stdio and
prints the result; `--show-wire` prints every raw JSON-RPC frame with its direction and
time, so the exchange can be read exactly as the protocol defines it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

if TYPE_CHECKING:
    from herald.client import ServerError
    from herald.stores.location import Stores

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
#: herald's default worker lease (`herald.runtime.runner.DEFAULT_LEASE_SECONDS`), repeated
#: so that `--help` does not import herald; a test keeps the two equal.
DEFAULT_LEASE_SECONDS = 15.0
#: How long ended jobs are kept by default (`herald.runtime.runner.DEFAULT_RETENTION_SECONDS`).
DEFAULT_RETENTION = "7d"

#: The private server `call` and `bulk` start when no URL is given. It keeps its jobs in
#: memory: it lives only as long as the command, and opening the shared store would make it
#: fail, at start-up, the jobs a long-running server on the same file is still running.
SPAWNED_SERVER = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="GiftGenius: gift suggestions over MCP.")


@app.command()
def serve(
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve one client on stdin/stdout instead of HTTP.")
    ] = False,
    host: Annotated[str, typer.Option(help="Interface to listen on (HTTP).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (HTTP).")] = 8000,
    store: Annotated[
        str | None,
        typer.Option(
            help="Where jobs and events are kept: sqlite:///PATH, redis://HOST:PORT/DB or memory. "
            "Default: a file in your data dir."
        ),
    ] = None,
    max_message_bytes: Annotated[
        int, typer.Option(help="Refuse messages larger than this.")
    ] = DEFAULT_MAX_BYTES,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Also accept requests whose Host/Origin names this host (repeat it); loopback always."
        ),
    ] = None,
    session_ttl: Annotated[float, typer.Option(help="Close HTTP sessions idle this many seconds.")] = 1800.0,
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
            "Default: twice the CPU cores.",
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
    no_worker: Annotated[
        bool,
        typer.Option(
            "--no-worker",
            help="Only serve: queue the jobs clients start, for `giftgenius worker` processes on "
            "the same store to run.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", hidden=True, help="No start-up banner.")] = False,
) -> None:
    """Serve GiftGenius over MCP: Streamable HTTP at http://HOST:PORT/mcp, or stdio."""
    retention_seconds = parse_duration(retention, "--retention")
    if no_worker:
        _require_shared_store(store, "--no-worker")
    from giftgenius.app import build_server

    stores = _open_stores(store, sessions=not stdio)
    server = build_server(widget_domain=widget_domain)
    server.use_job_store(stores.jobs)
    server.max_running_jobs = max_running_jobs
    server.job_lease_seconds = job_lease
    server.job_retention_seconds = retention_seconds
    server.takes_jobs = not no_worker
    if stdio:
        from herald.transports.stdio import run_stdio

        if not quiet:
            print(
                f"giftgenius: serving MCP on stdio (logs on stderr; jobs stored in {stores.where})",
                file=sys.stderr,
            )
        run_stdio(server, max_message_bytes=max_message_bytes)
        return
    from herald.transports.http import HttpConfig, run_http

    url = f"http://{host}:{port}/mcp"
    if not quiet:
        print(f"GiftGenius is serving MCP (Streamable HTTP) at {url}", file=sys.stderr)
        print(f"  events are stored in {stores.where}", file=sys.stderr)
        if no_worker:
            print("  jobs are queued for `giftgenius worker` processes on that store", file=sys.stderr)
        else:
            print(f"  jobs run here, as worker {server.job_service().worker_id}", file=sys.stderr)
        print(
            f"  connect a client to {url}, e.g. npx @modelcontextprotocol/inspector",
            file=sys.stderr,
            flush=True,
        )
    config = HttpConfig(
        max_body_bytes=max_message_bytes,
        allowed_hosts=HttpConfig().allowed_hosts | frozenset(allow_host or ()),
        session_ttl=session_ttl,
    )
    run_http(server, host=host, port=port, config=config, log=stores.log, sessions=stores.sessions)


@app.command()
def worker(
    store: Annotated[
        str | None,
        typer.Option(
            help="The store the servers queue jobs in: sqlite:///PATH or redis://HOST:PORT/DB. "
            "Default: the file `serve` uses by default."
        ),
    ] = None,
    max_running_jobs: Annotated[
        int | None,
        typer.Option(min=1, help="Run at most this many jobs at once. Default: twice the CPU cores."),
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
    quiet: Annotated[bool, typer.Option("--quiet", hidden=True, help="No start-up banner.")] = False,
) -> None:
    """Run GiftGenius jobs that `serve` processes queue in a shared store, until stopped (Ctrl-C)."""
    retention_seconds = parse_duration(retention, "--retention")
    _require_shared_store(store, "worker")
    from giftgenius.app import build_server

    stores = _open_stores(store, sessions=False)
    server = build_server()
    server.use_job_store(stores.jobs)
    server.max_running_jobs = max_running_jobs
    server.job_lease_seconds = job_lease
    server.job_retention_seconds = retention_seconds
    if not quiet:
        worker_id = server.job_service().worker_id
        print(
            f"giftgenius worker {worker_id}: running the jobs queued in {stores.where} (Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
    from herald.worker import run_worker

    run_worker(server)  # it closes the job store
    asyncio.run(_close(stores, jobs=False))


def _require_shared_store(store: str | None, what: str) -> None:
    """A worker and a serve-only replica meet in a store both can open; memory is no such place."""
    if store == "memory":
        raise typer.BadParameter(
            f"{what} needs a store that other processes share: --store sqlite:///PATH or "
            "--store redis://HOST:PORT/DB",
            param_hint="--store",
        )


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="The tool to call, e.g. suggest_gifts")],
    arg: Annotated[
        list[str] | None, typer.Option("--arg", "-a", help="An argument as NAME=VALUE; repeat it.")
    ] = None,
    show_wire: Annotated[bool, typer.Option("--show-wire", help="Print every raw JSON-RPC message.")] = False,
    modern: Annotated[
        bool, typer.Option("--modern", help="Use the stateless 2026-07-28 era, no handshake.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw result as JSON.")] = False,
) -> None:
    """Start a GiftGenius server, call TOOL with the given arguments, and print the result."""
    from rich.console import Console

    console = Console()
    wire_console = Console(stderr=True)
    try:
        result = asyncio.run(_call(tool, arg or [], modern=modern, wire=wire_console if show_wire else None))
    except (ValueError, ConnectionError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    _print_result(console, result, as_json=as_json)
    if result.get("isError"):
        raise typer.Exit(1)


async def _call(tool: str, pairs: list[str], *, modern: bool, wire: Any) -> dict[str, Any]:
    from herald.client import StdioClient, WireEvent
    from herald.client.stdio import ServerError

    def show(event: WireEvent) -> None:
        arrow = "→ client to server" if event.direction == "send" else "← server to client"
        stamp = datetime.fromtimestamp(event.timestamp).strftime("%H:%M:%S.%f")[:-3]
        wire.print(f"[dim]{stamp}[/dim] [bold]{arrow}[/bold]")
        wire.print_json(event.data.decode())

    argv = SPAWNED_SERVER
    async with StdioClient.spawn(argv, modern=modern, on_wire=show if wire else None) as client:
        tools = {entry["name"]: entry for entry in (await client.request("tools/list"))["tools"]}
        if tool not in tools:
            raise ValueError(f"unknown tool {tool!r}; available: {', '.join(tools)}")
        arguments = parse_arguments(pairs, tools[tool]["inputSchema"])
        try:
            return await client.call_tool(tool, arguments)
        except ServerError as exc:
            raise ValueError(str(exc)) from None


@app.command()
def bulk(
    csv_file: Annotated[
        Path, typer.Argument(help="CSV with header name,department,interests,budget", exists=True)
    ],
    url: Annotated[str | None, typer.Option(help="A running server, e.g. http://127.0.0.1:8000/mcp.")] = None,
    occasion: Annotated[str, typer.Option(help="The occasion for everyone.")] = "holiday",
    budget: Annotated[float, typer.Option(help="USD per person when a row has no budget.")] = 50.0,
    out: Annotated[
        Path | None, typer.Option(help="Where to write the result (JSON; a CSV goes beside it).")
    ] = None,
    modern: Annotated[bool, typer.Option("--modern", help="Use the stateless 2026-07-28 era.")] = False,
    max_message_bytes: Annotated[
        int | None,
        typer.Option(
            help="Raise the message limit of the server bulk starts (its --max-message-bytes); "
            f"default {DEFAULT_MAX_BYTES}. Not with --url: that server has its own."
        ),
    ] = None,
) -> None:
    """Pick gifts for everyone in a CSV, with a live progress bar. Ctrl-C cancels the job."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True)
    if url is not None and max_message_bytes is not None:
        console.print(
            "[red]error:[/red] --max-message-bytes sets the limit of the server bulk starts; "
            "the server at --url has its own (giftgenius serve --max-message-bytes)",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    argv = SPAWNED_SERVER
    if max_message_bytes is not None:
        argv = [*SPAWNED_SERVER, "--max-message-bytes", str(max_message_bytes)]
    target = out or csv_file.with_suffix(".gifts.json")
    files: dict[Path, str] = {}
    try:
        outcome = asyncio.run(
            _bulk(csv_file.read_text(), url or argv, occasion, budget, target, modern, console, files)
        )
    except KeyboardInterrupt:
        outcome = "cancelled"
    except (ConnectionError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    if outcome == "cancelled":
        console.print("[yellow]Cancelled.[/yellow] The job was asked to stop.")
        raise typer.Exit(130)
    if outcome != "completed":
        raise typer.Exit(1)
    for path, content in files.items():
        path.write_text(content)
    console.print(f"Wrote {' and '.join(str(path) for path in files)}")


async def _bulk(
    csv_text: str,
    server: str | list[str],
    occasion: str,
    budget: float,
    target: Path,
    modern: bool,
    console: Any,
    files: dict[Path, str],
) -> str:
    """Run the job on `server` (a URL, or the command line of one to spawn) and follow it.

    Fills `files` with the result documents to write.
    """
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from herald.client import ServerError, connect_http, connect_stdio

    spawned = not isinstance(server, str)
    connection = connect_http(server, modern) if isinstance(server, str) else connect_stdio(server, modern)
    async with connection as client:
        arguments = {"csv": csv_text, "occasion": occasion, "budget_per_person": budget}
        try:
            started = await client.call_tool("start_bulk_gift_analysis", arguments)
        except ServerError as exc:
            raise ValueError(refusal(exc, spawned=spawned)) from None
        job_id = started["structuredContent"]["jobId"]
        console.print(f"job {job_id} started")
        columns = (
            TextColumn("{task.description:<10}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
        )
        final = None
        with Progress(*columns, console=console) as bar:
            task = bar.add_task("queued", total=100, eta="-")
            try:
                async for event in client.job_events(job_id):
                    if event.kind == "progress":
                        eta = event.payload.get("etaSeconds")
                        shown_eta = f"{eta:.0f}s" if isinstance(eta, int | float) else "-"
                        bar.update(
                            task,
                            completed=event.payload["percentage"],
                            description=event.payload["stage"],
                            eta=shown_eta,
                        )
                    elif event.kind in ("completed", "failed", "cancelled"):
                        final = event
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                await client.call_tool("cancel_job", {"jobId": job_id})
                return "cancelled"
            if final is not None and final.kind == "completed":
                bar.update(task, completed=100, description="done")
        if final is None or final.kind != "completed":
            error = final.payload.get("error", {}) if final is not None else {}
            console.print(
                f"[red]The job {final.kind if final else 'ended'}:[/red] {error.get('message', '')}"
            )
            if error.get("hint"):
                console.print(f"hint: {error['hint']}")
            return final.kind if final else "lost"
        result_uri = final.payload["resultResourceId"]
        # Reading is safe to repeat: a replica lost mid-read is read from again once back.
        document = await client.request_again("resources/read", {"uri": result_uri})
        files[target] = document["contents"][0]["text"]
        exported = await client.request_again(
            "resources/read", {"uri": result_uri.replace("result.json", "result.csv")}
        )
        files[target.with_suffix(".csv")] = exported["contents"][0]["text"]
        console.print(final.payload.get("summary", "Done."))
        return "completed"


store_app = typer.Typer(no_args_is_help=True, help="Look after the store where jobs and events are kept.")
app.add_typer(store_app, name="store")


@store_app.command("prune")
def store_prune(
    store: Annotated[
        str | None,
        typer.Option(help="The store: sqlite:///PATH. Default: the file `serve` uses by default."),
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


def _open_stores(store: str | None, *, sessions: bool = True) -> Stores:
    """The stores `--store` names; a URL herald cannot use, or a Redis that does not answer,
    is said plainly instead of ending in a traceback at start-up."""
    from herald.stores.location import open_stores

    try:
        opened = open_stores(store, app_name="giftgenius", sessions=sessions)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--store") from None
    if store is not None and store.startswith(("redis://", "rediss://")):
        import redis

        try:
            redis.Redis.from_url(store, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            raise typer.BadParameter(
                f"cannot reach Redis at {opened.where}: {exc}", param_hint="--store"
            ) from None
    return opened


#: Units a duration on the command line may end with, in seconds.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str) -> float:
    """`7d`, `12h`, `30m`, `90s` or plain seconds, as seconds; a clear error for anything else."""
    value = text.strip().lower()
    unit = DURATION_UNITS.get(value[-1:]) if value else None
    number = value[:-1] if unit is not None else value
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise typer.BadParameter(
            f"{text!r} is not a duration: write a number with d, h, m or s after it, e.g. 7d or 90s",
            param_hint=option,
        )
    return seconds


def refusal(error: ServerError, *, spawned: bool) -> str:
    """What to tell the user when the server refused the bulk request.

    A refusal for size gets the numbers and the one flag that helps: `bulk
    --max-message-bytes` when bulk started the server, `giftgenius serve
    --max-message-bytes` for the server at --url. Over stdio the server's error carries
    the size and the limit as data; over HTTP it is a 413 whose message names the limit.
    """
    data = error.data if isinstance(error.data, dict) else {}
    size, limit = data.get("size"), data.get("limit")
    if not (error.http_status == 413 or (isinstance(size, int) and isinstance(limit, int))):
        return str(error)
    if spawned and isinstance(size, int) and isinstance(limit, int):
        room = -(-size // 2**20) * 2**20  # the size rounded up to whole MiB
        return (
            f"the CSV is too large to send: the request is {size} bytes and the server's limit "
            f"is {limit} bytes.\nRun bulk again with --max-message-bytes {room} (or more) to raise it."
        )
    return (
        f"the server refused the CSV as too large: {error.message}\n"
        "Start that server with a larger `giftgenius serve --max-message-bytes` to accept it."
    )


def parse_arguments(pairs: list[str], schema: dict[str, Any]) -> dict[str, Any]:
    """NAME=VALUE pairs to JSON arguments, typed by the tool's input schema."""
    properties = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator:
            raise ValueError(f"argument {pair!r} is not NAME=VALUE")
        if properties.get(name, {}).get("type") == "string":
            arguments[name] = value
            continue
        try:
            arguments[name] = orjson.loads(value)
        except orjson.JSONDecodeError:
            arguments[name] = value
    return arguments


def _print_result(console: Any, result: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        console.print_json(orjson.dumps(result).decode())
        return
    for block in result.get("content", []):
        if block.get("type") == "text":
            style = "red" if result.get("isError") else None
            console.print(block["text"], style=style, markup=False, soft_wrap=True)
        else:
            console.print(f"[{block.get('type')} content]")


def main() -> None:
    app()
