"""The options and the JSON printing that the commands talking to a server share.

`call`, `read`, `prompt` (`herald.cli.requests`) and `job` (`giftgenius.cli.jobs`) take
the same `--url`, `--modern` and `--json`, and print JSON the same way: here, so that
neither module imports the other for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ArgOption", "JsonOption", "ModernOption", "UrlOption", "WireOption", "print_json"]

UrlOption = Annotated[
    str | None,
    typer.Option(help="A running server, e.g. http://127.0.0.1:8000/mcp. Default: start a private one."),
]
ArgOption = Annotated[
    list[str] | None, typer.Option("--arg", "-a", help="An argument as NAME=VALUE; repeat it.")
]
ModernOption = Annotated[
    bool,
    typer.Option(
        "--modern", help="Use the modern era (2026-07-28): no handshake, each request stands alone."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the raw result as JSON.")]
WireOption = Annotated[bool, typer.Option("--show-wire", help="Print every raw JSON-RPC message.")]


def print_json(console: Console, document: Any) -> None:
    """A JSON document, indented and highlighted, as `--json` prints every result."""
    console.print_json(orjson.dumps(document).decode())
