"""`call`, `read` and `prompt`: one request to a server, its answer printed.

Without `--url` each starts a private server over stdio, speaks MCP to it and stops it;
with `--url` it talks to the server running there, whose jobs outlive the command.
`--show-wire` prints every raw JSON-RPC frame with its direction and time, so the
exchange can be read exactly as the protocol defines it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from giftgenius.cli.connecting import connected
from giftgenius.cli.flags import ArgOption, JsonOption, ModernOption, UrlOption, WireOption, print_json
from giftgenius.cli.jobs import Whereabouts, follow, say_ending
from giftgenius.cli.options import parse_arguments, parse_strings
from giftgenius.cli.problems import UserError, refused

if TYPE_CHECKING:
    from rich.console import Console

    from herald.client import Client, WireEvent

#: Prints one raw frame, for `--show-wire`.
WirePrinter = Callable[["WireEvent"], None]
#: JSON-RPC's "method not found": what a server without tools answers to tools/list.
METHOD_NOT_FOUND = -32601


def call(
    tool: Annotated[str, typer.Argument(help="The tool to call, e.g. suggest_gifts")],
    arg: ArgOption = None,
    url: UrlOption = None,
    show_wire: WireOption = False,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Call TOOL with the given arguments and print the result."""
    from rich.console import Console

    console = Console()
    parse_strings(arg or [])  # the NAME=VALUE form is checked before a server is started
    result, ended = asyncio.run(_call(tool, arg or [], url=url, modern=modern, wire=_wire(show_wire)))
    print_content(console, result, as_json=as_json)
    if result.get("isError") or ended not in (None, "completed"):
        raise typer.Exit(1)


async def _call(
    tool: str, pairs: list[str], *, url: str | None, modern: bool, wire: WirePrinter | None
) -> tuple[dict[str, Any], str | None]:
    """The tool's result, and how the job it started ended when this command followed it."""
    from herald.client import ServerError

    async with connected(url, modern=modern, on_wire=wire) as client:
        tools = {entry["name"]: entry for entry in await _listed(client, "tools/list", "tools")}
        if tool not in tools:
            offered = ", ".join(sorted(tools)) or "no tools"
            raise UserError(f"unknown tool {tool!r}", f"The server offers: {offered}")
        arguments = parse_arguments(pairs, tools[tool].get("inputSchema", {}))
        try:
            result = await client.call_tool(tool, arguments)
        except ServerError as error:
            raise refused(f"the call of {tool}", error) from None
        started = result.get("structuredContent")
        if url is None and isinstance(started, dict) and isinstance(started.get("jobId"), str):
            return result, await _see_through(client, started["jobId"])
        return result, None


async def _see_through(client: Client, job_id: str) -> str:
    """Follow a job the private server started to its end: that server stops with the command.

    With `--url` the job outlives the command instead, and `giftgenius job` follows it.
    """
    from rich.console import Console

    console = Console(stderr=True)
    console.print(
        f"job {job_id} runs in the private server this command started; following it to its end "
        "(with --url a server you run keeps it)",
        highlight=False,
        soft_wrap=True,
    )
    where = Whereabouts(None, job_id, client.reconnect_timeout)
    return say_ending(console, await follow(client, job_id, console, where))


def read(
    uri: Annotated[str, typer.Argument(help="The resource to read, e.g. giftgenius://catalog")],
    url: UrlOption = None,
    show_wire: WireOption = False,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Read the resource URI and print its contents."""
    from rich.console import Console

    result = asyncio.run(_read(uri, url=url, modern=modern, wire=_wire(show_wire)))
    console = Console()
    if as_json:
        print_json(console, result)
        return
    for content in result.get("contents", []):
        if "text" in content:
            console.print(content["text"], markup=False, soft_wrap=True, highlight=False)
        else:
            size = len(content.get("blob", ""))
            console.print(
                f"[{content.get('mimeType', 'binary')} content, base64: {size} chars]", markup=False
            )


async def _read(uri: str, *, url: str | None, modern: bool, wire: WirePrinter | None) -> dict[str, Any]:
    from herald.client import ServerError

    async with connected(url, modern=modern, on_wire=wire) as client:
        try:
            return await client.request("resources/read", {"uri": uri})
        except ServerError as error:
            listed = await _listed(client, "resources/list", "resources")
            known = ", ".join(sorted(entry["uri"] for entry in listed)) or "none"
            raise UserError(
                f"the server cannot read {uri}: {error.message}", f"Resources it lists: {known}"
            ) from None


def prompt(
    name: Annotated[str, typer.Argument(help="The prompt, e.g. gift_congrats_style")],
    arg: ArgOption = None,
    url: UrlOption = None,
    show_wire: WireOption = False,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Get the prompt NAME filled in with the given arguments, and print its messages."""
    from rich.console import Console

    arguments = parse_strings(arg or [])
    result = asyncio.run(_prompt(name, arguments, url=url, modern=modern, wire=_wire(show_wire)))
    console = Console()
    if as_json:
        print_json(console, result)
        return
    if result.get("description"):
        console.print(result["description"], style="bold", markup=False)
    for entry in result.get("messages", []):
        content = entry.get("content", {})
        console.print(f"\n[{entry.get('role')}]", style="dim", markup=False)
        if content.get("type") == "text":
            console.print(content["text"], markup=False, soft_wrap=True, highlight=False)
        else:
            console.print(f"[{content.get('type')} content]", markup=False)


async def _prompt(
    name: str, arguments: dict[str, str], *, url: str | None, modern: bool, wire: WirePrinter | None
) -> dict[str, Any]:
    from herald.client import ServerError

    async with connected(url, modern=modern, on_wire=wire) as client:
        prompts = {entry["name"]: entry for entry in await _listed(client, "prompts/list", "prompts")}
        if name not in prompts:
            offered = ", ".join(sorted(prompts)) or "no prompts"
            raise UserError(f"unknown prompt {name!r}", f"The server offers: {offered}")
        declared = prompts[name].get("arguments", [])
        missing = [
            entry["name"] for entry in declared if entry.get("required") and entry["name"] not in arguments
        ]
        if missing:
            given = " ".join(f"--arg {item}=…" for item in missing)
            raise UserError(f"the prompt {name} needs {', '.join(missing)}", f"Add {given}")
        unknown = sorted(set(arguments) - {entry["name"] for entry in declared})
        if unknown:
            names = ", ".join(entry["name"] for entry in declared)
            raise UserError(f"the prompt {name} takes no {', '.join(unknown)}", f"Its arguments: {names}")
        try:
            return await client.request("prompts/get", {"name": name, "arguments": arguments})
        except ServerError as error:
            raise refused(f"the prompt {name}", error) from None


async def _listed(client: Client, method: str, key: str) -> list[dict[str, Any]]:
    """Every entry of a paginated list, following `nextCursor`; none where the server has no such list."""
    from herald.client import ServerError

    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        try:
            page = await client.request(method, {"cursor": cursor} if cursor else None)
        except ServerError as error:
            if error.code == METHOD_NOT_FOUND:
                return entries  # a server without tools (or prompts, or resources) lists none
            raise
        entries.extend(page.get(key, []))
        cursor = page.get("nextCursor")
        if not cursor:
            return entries


def _wire(show: bool) -> WirePrinter | None:
    """A printer of raw frames on stderr, for `--show-wire`; None without it."""
    if not show:
        return None
    from rich.console import Console

    console = Console(stderr=True)

    def print_frame(event: WireEvent) -> None:
        arrow = "→ client to server" if event.direction == "send" else "← server to client"
        stamp = datetime.fromtimestamp(event.timestamp).strftime("%H:%M:%S.%f")[:-3]
        console.print(f"[dim]{stamp}[/dim] [bold]{arrow}[/bold]")
        try:
            console.print_json(event.data.decode(errors="replace"))
        except ValueError:  # not JSON (the page at a wrong URL, say): shown as it came
            console.print(event.data.decode(errors="replace"), markup=False, highlight=False)

    return print_frame


def print_content(console: Console, result: dict[str, Any], *, as_json: bool) -> None:
    """A tool result as a person reads it: its text blocks (red for an error), or raw JSON."""
    if as_json:
        print_json(console, result)
        return
    for block in result.get("content", []):
        if block.get("type") == "text":
            style = "red" if result.get("isError") else None
            console.print(block["text"], style=style, markup=False, soft_wrap=True)
        else:
            console.print(f"[{block.get('type')} content]", markup=False)
