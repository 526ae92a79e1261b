"""One request to a server and its answer printed: what `call`, `read`, `prompt` and
`inspect` do, for the `herald` and `giftgenius` commands alike.

Each takes a `Target`: a server at a URL, or one started over stdio for the command.
Arguments are checked against the tool's `inputSchema` before anything is sent. A job a
started server begins is followed to its end, since that server stops with the command.
`--show-wire` prints every raw JSON-RPC frame with its direction and time, so the
exchange can be read exactly as the protocol defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from herald.cli.arguments import check_arguments, parse_arguments, parse_strings
from herald.cli.connecting import Target, connected
from herald.cli.flags import print_json
from herald.cli.following import Whereabouts, follow, say_ending
from herald.cli.problems import UserError, refused

if TYPE_CHECKING:
    from rich.console import Console

    from herald.client import Client, WireEvent

__all__ = [
    "WirePrinter",
    "call_tool",
    "get_prompt",
    "listed",
    "offer",
    "print_content",
    "print_contents",
    "print_messages",
    "read_resource",
    "run_call",
    "run_prompt",
    "run_read",
    "wire_printer",
]

#: Prints one raw frame, for `--show-wire`.
WirePrinter = Callable[["WireEvent"], None]
#: JSON-RPC's "method not found": what a server without tools answers to tools/list.
METHOD_NOT_FOUND = -32601


async def call_tool(
    target: Target, tool: str, pairs: list[str], *, modern: bool, wire: WirePrinter | None
) -> tuple[dict[str, Any], str | None]:
    """The tool's result, and how the job it started ended when this command followed it."""
    from herald.client import ServerError

    async with connected(target, modern=modern, on_wire=wire) as client:
        tools = {entry["name"]: entry for entry in await listed(client, "tools/list", "tools")}
        if tool not in tools:
            offered = ", ".join(sorted(tools)) or "no tools"
            raise UserError(f"unknown tool {tool!r}", f"The server offers: {offered}")
        schema = tools[tool].get("inputSchema", {})
        arguments = parse_arguments(pairs, schema)
        check_arguments(tool, arguments, schema)
        try:
            result = await client.call_tool(tool, arguments)
        except ServerError as error:
            raise refused(f"the call of {tool}", error) from None
        started = result.get("structuredContent")
        if target.url is None and isinstance(started, dict) and isinstance(started.get("jobId"), str):
            return result, await _see_through(client, target, started["jobId"])
        return result, None


async def _see_through(client: Client, target: Target, job_id: str) -> str:
    """Follow a job the started server runs to its end: that server stops with the command."""
    from rich.console import Console

    console = Console(stderr=True)
    console.print(
        f"job {job_id} runs in {target.name}; following it to its end "
        "(a server you run at a URL keeps it instead)",
        highlight=False,
        soft_wrap=True,
    )
    where = Whereabouts(target, job_id, client.reconnect_timeout)
    return say_ending(console, await follow(client, job_id, console, where))


async def read_resource(
    target: Target, uri: str, *, modern: bool, wire: WirePrinter | None
) -> dict[str, Any]:
    from herald.client import ServerError

    async with connected(target, modern=modern, on_wire=wire) as client:
        try:
            return await client.request("resources/read", {"uri": uri})
        except ServerError as error:
            listing = await listed(client, "resources/list", "resources")
            known = ", ".join(sorted(entry["uri"] for entry in listing)) or "none"
            raise UserError(
                f"the server cannot read {uri}: {error.message}", f"Resources it lists: {known}"
            ) from None


async def get_prompt(
    target: Target, name: str, arguments: dict[str, str], *, modern: bool, wire: WirePrinter | None
) -> dict[str, Any]:
    from herald.client import ServerError

    async with connected(target, modern=modern, on_wire=wire) as client:
        prompts = {entry["name"]: entry for entry in await listed(client, "prompts/list", "prompts")}
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


async def offer(target: Target, *, modern: bool, wire: WirePrinter | None) -> dict[str, Any]:
    """Everything the server offers: its identity, tools, resources, templates and prompts."""
    async with connected(target, modern=modern, on_wire=wire) as client:
        return {
            "server": client.server_info,
            "tools": await listed(client, "tools/list", "tools"),
            "resources": await listed(client, "resources/list", "resources"),
            "resourceTemplates": await listed(client, "resources/templates/list", "resourceTemplates"),
            "prompts": await listed(client, "prompts/list", "prompts"),
        }


async def listed(client: Client, method: str, key: str) -> list[dict[str, Any]]:
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


def wire_printer(show: bool) -> WirePrinter | None:
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


def print_contents(console: Console, result: dict[str, Any], *, as_json: bool) -> None:
    """A resource's contents: text as it is, a blob by its type and size, or raw JSON."""
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


def print_messages(console: Console, result: dict[str, Any], *, as_json: bool) -> None:
    """A prompt's messages, each under its role, or raw JSON."""
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


# -- the commands' bodies, for `herald` and `giftgenius` alike ----------------------------------


def run_call(
    target: Target, tool: str, pairs: list[str], *, modern: bool, show_wire: bool, as_json: bool
) -> None:
    """`call`: the tool's result printed; exit status 1 for a tool error or a job that failed."""
    import asyncio

    import typer
    from rich.console import Console

    parse_strings(pairs)  # the NAME=VALUE form is checked before a server is started
    result, ended = asyncio.run(call_tool(target, tool, pairs, modern=modern, wire=wire_printer(show_wire)))
    print_content(Console(), result, as_json=as_json)
    if result.get("isError") or ended not in (None, "completed"):
        raise typer.Exit(1)


def run_read(target: Target, uri: str, *, modern: bool, show_wire: bool, as_json: bool) -> None:
    """`read`: the resource's contents printed."""
    import asyncio

    from rich.console import Console

    result = asyncio.run(read_resource(target, uri, modern=modern, wire=wire_printer(show_wire)))
    print_contents(Console(), result, as_json=as_json)


def run_prompt(
    target: Target, name: str, pairs: list[str], *, modern: bool, show_wire: bool, as_json: bool
) -> None:
    """`prompt`: the prompt's messages printed."""
    import asyncio

    from rich.console import Console

    arguments = parse_strings(pairs)
    result = asyncio.run(get_prompt(target, name, arguments, modern=modern, wire=wire_printer(show_wire)))
    print_messages(Console(), result, as_json=as_json)
