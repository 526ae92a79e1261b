"""`herald inspect|call|read|prompt|job`: talk to any MCP server as a client does.

TARGET is an `http(s)://` URL of a running server, or a server file as `herald run` takes
it, started over stdio for the one command (`herald.cli.target`). `--json` prints the
raw result. Arguments are checked against the tool's schema before anything is sent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from herald.cli.connecting import connected
from herald.cli.flags import ArgOption, JsonOption, ModernOption, WireOption, print_json
from herald.cli.following import (
    Whereabouts,
    document_body,
    print_status,
    require_completed,
    run_watch,
    status_of,
    write_result,
)
from herald.cli.problems import UserError
from herald.cli.requests import offer, run_call, run_prompt, run_read, wire_printer
from herald.cli.target import target_of

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["call", "inspect", "job_app", "prompt", "read"]

TargetArgument = Annotated[
    str,
    typer.Argument(
        metavar="TARGET", help="A server's URL (http://127.0.0.1:8000/mcp) or file (server.py[:NAME])"
    ),
]
#: The MIME type of an MCP Apps widget document.
WIDGET_MIME_TYPE = "text/html;profile=mcp-app"


def inspect(
    target: TargetArgument,
    as_json: JsonOption = False,
    modern: ModernOption = False,
    show_wire: WireOption = False,
) -> None:
    """Print what a server offers: its tools, resources, prompts and widgets."""
    from rich.console import Console

    offered = asyncio.run(offer(target_of(target), modern=modern, wire=wire_printer(show_wire)))
    console = Console()
    if as_json:
        print_json(console, offered)
        return
    _print_offer(console, offered)


def _print_offer(console: Console, offered: dict[str, Any]) -> None:
    from rich.table import Table

    server = offered.get("server") or {}
    console.print(f"{server.get('name', 'server')} {server.get('version', '')}", style="bold", markup=False)
    widgets = [entry for entry in offered["resources"] if entry.get("mimeType") == WIDGET_MIME_TYPE]
    sections: list[tuple[str, list[str], list[list[str]]]] = [
        (
            "Tools",
            ["name", "arguments", "description"],
            [
                [tool["name"], _arguments(tool), _first_line(tool.get("description"))]
                for tool in offered["tools"]
            ],
        ),
        (
            "Resources",
            ["uri", "type", "description"],
            [
                [entry["uri"], entry.get("mimeType", ""), _first_line(entry.get("description"))]
                for entry in offered["resources"]
                if entry not in widgets
            ],
        ),
        (
            "Resource templates",
            ["uri template", "type", "description"],
            [
                [entry["uriTemplate"], entry.get("mimeType", ""), _first_line(entry.get("description"))]
                for entry in offered["resourceTemplates"]
            ],
        ),
        (
            "Prompts",
            ["name", "arguments", "description"],
            [
                [
                    entry["name"],
                    ", ".join(argument["name"] for argument in entry.get("arguments", [])),
                    _first_line(entry.get("description")),
                ]
                for entry in offered["prompts"]
            ],
        ),
        (
            "Widgets",
            ["uri", "used by", "description"],
            [
                [entry["uri"], _users(entry["uri"], offered["tools"]), _first_line(entry.get("description"))]
                for entry in widgets
            ],
        ),
    ]
    for title, columns, rows in sections:
        if not rows:
            continue
        table = Table(title=title, title_justify="left", show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)


def _arguments(tool: dict[str, Any]) -> str:
    schema = tool.get("inputSchema", {})
    required = set(schema.get("required", []))
    return ", ".join(name + ("" if name in required else "?") for name in schema.get("properties", {}))


def _users(uri: str, tools: list[dict[str, Any]]) -> str:
    """The tools whose results a widget renders."""
    return ", ".join(
        tool["name"]
        for tool in tools
        if ((tool.get("_meta") or {}).get("ui") or {}).get("resourceUri") == uri
    )


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def call(
    target: TargetArgument,
    tool: Annotated[str, typer.Argument(help="The tool to call")],
    arg: ArgOption = None,
    as_json: JsonOption = False,
    modern: ModernOption = False,
    show_wire: WireOption = False,
) -> None:
    """Call TOOL with the given arguments and print the result."""
    run_call(target_of(target), tool, arg or [], modern=modern, show_wire=show_wire, as_json=as_json)


def read(
    target: TargetArgument,
    uri: Annotated[str, typer.Argument(help="The resource to read")],
    as_json: JsonOption = False,
    modern: ModernOption = False,
    show_wire: WireOption = False,
) -> None:
    """Read the resource URI and print its contents."""
    run_read(target_of(target), uri, modern=modern, show_wire=show_wire, as_json=as_json)


def prompt(
    target: TargetArgument,
    name: Annotated[str, typer.Argument(help="The prompt")],
    arg: ArgOption = None,
    as_json: JsonOption = False,
    modern: ModernOption = False,
    show_wire: WireOption = False,
) -> None:
    """Get the prompt NAME filled in with the given arguments, and print its messages."""
    run_prompt(target_of(target), name, arg or [], modern=modern, show_wire=show_wire, as_json=as_json)


# -- job status | watch | result ----------------------------------------------------------------

job_app = typer.Typer(
    no_args_is_help=True, help="Look at a job on a server: its status, progress and result."
)
JobIdArgument = Annotated[str, typer.Argument(help="The job's id, as the job tool returned it")]
RetryOption = Annotated[
    float, typer.Option(min=1, help="Keep trying this many seconds to reach a server that went away.")
]


@job_app.command("status")
def job_status(
    target: TargetArgument, job_id: JobIdArgument, as_json: JsonOption = False, modern: ModernOption = False
) -> None:
    """Print where a job is: its status, progress and stage, and its result when it has one."""
    from rich.console import Console

    server = target_of(target, on_its_store=True)

    async def ask() -> dict[str, Any]:
        async with connected(server, modern=modern) as client:
            return await status_of(client, job_id, server.where)

    status = asyncio.run(ask())
    console = Console()
    if as_json:
        print_json(console, status)
        return
    print_status(console, job_id, status, server.again("result", job_id))


@job_app.command("watch")
def job_watch(
    target: TargetArgument,
    job_id: JobIdArgument,
    modern: ModernOption = False,
    retry_for: RetryOption = 60.0,
) -> None:
    """Follow a job's progress until it ends (Ctrl-C stops watching; the job goes on)."""
    run_watch(target_of(target, on_its_store=True), job_id, modern=modern, retry_for=retry_for)


@job_app.command("result")
def job_result(
    target: TargetArgument,
    job_id: JobIdArgument,
    out: Annotated[Path | None, typer.Option(help="Write the result here instead of printing it.")] = None,
    modern: ModernOption = False,
    retry_for: RetryOption = 60.0,
) -> None:
    """Print (or write to --out) the result of a job that completed."""
    from rich.console import Console

    from herald.cli.checks import writable

    if out is not None:
        writable(out, "--out")
    console = Console(stderr=True)
    server = target_of(target, on_its_store=True)
    where = Whereabouts(server, job_id, retry_for)

    async def fetch() -> str | None:
        async with connected(server, modern=modern, retry_for=retry_for) as client:
            status = await status_of(client, job_id, server.where)
            require_completed(status, job_id, f"Wait for it: herald job watch {target} {job_id}")
            if out is not None:
                await write_result(client, [(status["resultResourceId"], out)], console, where)
                return None
            document = await client.request_again("resources/read", {"uri": status["resultResourceId"]})
            body = document_body(document)
            if isinstance(body, bytes):
                raise UserError(
                    f"the result of job {job_id} is {len(body)} bytes of binary data",
                    f"Save it to a file: herald job result {target} {job_id} --out FILE",
                )
            return body

    text = asyncio.run(fetch())
    if text is not None:
        Console().print(text, markup=False, highlight=False, soft_wrap=True)
