"""The `giftgenius` command: serve the app, run its jobs, or talk to a server as a client does.

Each subcommand lives with its kin (`serving`, `calls`, `jobs`); this module puts them
under one name and makes sure that a person's mistake, wherever it is found, is said as
`error: …` with exit status 2 (`problems.UserError`), never as a traceback.
"""

from __future__ import annotations

import typer

from giftgenius.cli.calls import call, prompt, read
from giftgenius.cli.jobs import bulk, job_app
from giftgenius.cli.options import DEFAULT_MAX_BYTES, parse_duration
from giftgenius.cli.serving import DEFAULT_LEASE_SECONDS, DEFAULT_RETENTION, serve, store_app, worker
from herald.cli.arguments import parse_arguments
from herald.cli.checks import run_command

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_RETENTION",
    "app",
    "main",
    "parse_arguments",
    "parse_duration",
]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="GiftGenius: gift suggestions over MCP.",
)
app.command()(serve)
app.command()(worker)
app.command()(call)
app.command()(read)
app.command()(prompt)
app.command()(bulk)
app.add_typer(job_app, name="job")
app.add_typer(store_app, name="store")


def main() -> None:
    """Run the command; a `UserError` from any depth is said in a line or two, not a traceback."""
    run_command(app)
