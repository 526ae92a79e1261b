"""The `giftgenius` command: serve the app, or call one of its tools as a client would.

`serve` stays lean (no rich, no typer work beyond parsing) because its start-up time is
what an MCP host waits for. `call` spawns a server, speaks MCP to it over stdio and
prints the result; `--show-wire` prints every raw JSON-RPC frame with its direction and
time, so the exchange can be read exactly as the protocol defines it.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from typing import Annotated, Any

import orjson
import typer

DEFAULT_MAX_BYTES = 4 * 1024 * 1024

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
            help="Where events are kept: sqlite:///PATH or memory. Default: a file in your data dir."
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
    quiet: Annotated[bool, typer.Option("--quiet", hidden=True, help="No start-up banner.")] = False,
) -> None:
    """Serve GiftGenius over MCP: Streamable HTTP at http://HOST:PORT/mcp, or stdio."""
    from giftgenius.app import build_server

    if stdio:
        from herald.transports.stdio import run_stdio

        if not quiet:
            print("giftgenius: serving MCP on stdio (logs on stderr)", file=sys.stderr)
        run_stdio(build_server(), max_message_bytes=max_message_bytes)
        return
    from herald.stores.location import open_event_log
    from herald.transports.http import HttpConfig, run_http

    log, where = open_event_log(store, app_name="giftgenius")
    url = f"http://{host}:{port}/mcp"
    if not quiet:
        print(f"GiftGenius is serving MCP (Streamable HTTP) at {url}", file=sys.stderr)
        print(f"  events are stored in {where}", file=sys.stderr)
        print(f"  connect a client to {url}, e.g. npx @modelcontextprotocol/inspector", file=sys.stderr)
    config = HttpConfig(
        max_body_bytes=max_message_bytes,
        allowed_hosts=HttpConfig().allowed_hosts | frozenset(allow_host or ()),
        session_ttl=session_ttl,
    )
    run_http(build_server(), host=host, port=port, config=config, log=log)


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

    argv = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet"]
    async with StdioClient.spawn(argv, modern=modern, on_wire=show if wire else None) as client:
        tools = {entry["name"]: entry for entry in (await client.request("tools/list"))["tools"]}
        if tool not in tools:
            raise ValueError(f"unknown tool {tool!r}; available: {', '.join(tools)}")
        arguments = parse_arguments(pairs, tools[tool]["inputSchema"])
        try:
            return await client.call_tool(tool, arguments)
        except ServerError as exc:
            raise ValueError(str(exc)) from None


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
