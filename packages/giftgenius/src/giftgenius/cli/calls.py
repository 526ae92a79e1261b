"""`call`, `read` and `prompt`: one request to GiftGenius, its answer printed.

Without `--url` each starts a private server over stdio, speaks MCP to it and stops it;
with `--url` it talks to the server running there, whose jobs outlive the command. The
requests themselves are herald's (`herald.cli.requests`), as `herald call` makes them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from giftgenius.cli.target import giftgenius_target
from herald.cli.flags import ArgOption, JsonOption, ModernOption, UrlOption, WireOption
from herald.cli.requests import run_call, run_prompt, run_read


def call(
    tool: Annotated[str, typer.Argument(help="The tool to call, e.g. suggest_gifts")],
    arg: ArgOption = None,
    url: UrlOption = None,
    show_wire: WireOption = False,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Call TOOL with the given arguments and print the result."""
    run_call(giftgenius_target(url), tool, arg or [], modern=modern, show_wire=show_wire, as_json=as_json)


def read(
    uri: Annotated[str, typer.Argument(help="The resource to read, e.g. giftgenius://catalog")],
    url: UrlOption = None,
    show_wire: WireOption = False,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Read the resource URI and print its contents."""
    run_read(giftgenius_target(url), uri, modern=modern, show_wire=show_wire, as_json=as_json)


def prompt(
    name: Annotated[str, typer.Argument(help="The prompt, e.g. gift_congrats_style")],
    arg: ArgOption = None,
    url: UrlOption = None,
    show_wire: WireOption = False,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Get the prompt NAME filled in with the given arguments, and print its messages."""
    run_prompt(giftgenius_target(url), name, arg or [], modern=modern, show_wire=show_wire, as_json=as_json)
