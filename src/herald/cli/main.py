"""The `herald` command: serve a server file, talk to any MCP server, record its traffic, lint it.

    herald run server.py [--http --port 8000] [--reload] [--store memory]
    herald inspect server.py | http://127.0.0.1:8000/mcp [--json]
    herald call TARGET TOOL --arg name=value [--json]
    herald read TARGET URI · herald prompt TARGET NAME --arg name=value
    herald job status|watch|result TARGET JOB_ID
    herald record -- npx -y @modelcontextprotocol/server-everything     # a stdio server
    herald record --upstream http://127.0.0.1:8000/mcp --port 8001      # an HTTP server
    herald lint mcp-wire.jsonl [--format json|sarif] [--rule jobs/*] [--ignore mcp/*]
    herald log view mcp-wire.jsonl [--mermaid]
    herald log schema

A person's mistake (a missing file, a taken port, a misspelt rule) is said in a line or
two with exit status 2, never as a traceback. `herald lint` exits with 1 when it finds
what `--fail-on` names (errors, by default).
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Annotated

import typer

from herald.cli.checks import UserError, bind, run_command, shown_host, writable
from herald.cli.serving import run
from herald.cli.talking import call, inspect, job_app, prompt, read

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="herald: serve MCP servers, talk to any of them, record their traffic and lint it.",
)
app.command()(run)
app.command()(inspect)
app.command()(call)
app.command()(read)
app.command()(prompt)
app.add_typer(job_app, name="job")
log_app = typer.Typer(no_args_is_help=True, help="Look at a message log.")
app.add_typer(log_app, name="log")


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"


class FailOn(enum.StrEnum):
    error = "error"
    warning = "warning"
    never = "never"


# -- record ------------------------------------------------------------------------------------


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def record(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="The stdio server to start and record, after `--`: herald record -- CMD ARGS…"),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(help="Record a Streamable HTTP server: its URL, e.g. http://127.0.0.1:8000/mcp."),
    ] = None,
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="With --upstream: the port clients connect to.")
    ] = 8001,
    host: Annotated[str, typer.Option(help="With --upstream: the interface to listen on.")] = "127.0.0.1",
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The log to append to. Default: mcp-wire-DATE-TIME.jsonl here."),
    ] = None,
) -> None:
    """Put a transparent recorder in front of an MCP server; every message goes to a JSONL log.

    A stdio server: give the host `herald record -- CMD ARGS…` where it had `CMD ARGS…`.
    An HTTP server: point clients at http://HOST:PORT/PATH instead of the upstream URL.
    """
    argv = list(command or [])
    if upstream is not None and argv:
        raise UserError("give either a command to start (after --) or --upstream URL, not both")
    if upstream is None and not argv:
        raise UserError(
            "nothing to record",
            "Start a stdio server: herald record -- CMD ARGS…, or front an HTTP one: "
            "herald record --upstream http://127.0.0.1:8000/mcp",
        )
    path = out or Path(f"mcp-wire-{datetime.now():%Y%m%d-%H%M%S}.jsonl")
    writable(path, "--out")
    if upstream is not None:
        _record_http(upstream, host, port, path)
        return
    from herald.record.stdio import ServerDidNotStart, record_stdio
    from herald.transports.stdio import run_event_loop
    from herald.wire.writer import MessageLog

    print(f"herald record: recording {' '.join(argv)} to {path.resolve()}", file=sys.stderr, flush=True)
    status: list[int] = []

    async def run() -> None:
        status.append(await record_stdio(argv, lambda: MessageLog.open(path)))

    try:
        run_event_loop(run())
    except ServerDidNotStart as failed:
        raise UserError(str(failed), "Check the command after --: it must run a stdio MCP server.") from None
    raise typer.Exit(status[0] if status else 1)


def _record_http(upstream: str, host: str, port: int, path: Path) -> None:
    from herald.extras import needs

    with needs("record", "herald record --upstream"):
        from herald.record.http import RecordingProxy, origin_of

    try:
        origin_of(upstream)
    except ValueError as bad:
        raise UserError(f"--upstream: {bad}", "e.g. --upstream http://127.0.0.1:8000/mcp") from None
    listening = bind(host, port)
    import uvicorn

    from herald.wire.writer import MessageLog

    proxy = RecordingProxy(upstream, MessageLog.open(path))
    target = upstream.split("://", 1)[1]
    local_path = "/" + target.split("/", 1)[1] if "/" in target else "/"
    print(f"herald record: recording {upstream} to {path.resolve()}", file=sys.stderr)
    print(f"  connect clients to http://{shown_host(host)}:{port}{local_path}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        proxy,
        log_level="warning",
        access_log=False,
        lifespan="on",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    with suppress(KeyboardInterrupt):
        server.run(sockets=[listening])


# -- lint --------------------------------------------------------------------------------------


@app.command()
def lint(
    log: Annotated[
        Path | None, typer.Argument(help="The message log to check (- for standard input).")
    ] = None,
    output_format: Annotated[
        Format, typer.Option("--format", "-f", help="How to say what was found.")
    ] = Format.text,
    rule: Annotated[
        list[str] | None, typer.Option("--rule", "-r", help="Check only this rule (an id or a glob: jobs/*).")
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", "-i", help="Do not check this rule.")
    ] = None,
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit with 1 when a finding of this severity or worse shows.")
    ] = (FailOn.error),
    max_per_rule: Annotated[
        int,
        typer.Option(min=0, help="Show at most this many findings of one rule (0: all); all are counted."),
    ] = 50,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here.")] = None,
    list_rules: Annotated[bool, typer.Option("--list-rules", help="List the rules and exit.")] = False,
) -> None:
    """Check a message log against MCP's rules: pairing, handshake, capabilities, schemas, jobs."""
    from herald.lint import UnknownRule, lint_stream, select
    from herald.lint.report import JsonReport, Report, SarifReport, TextReport
    from herald.lint.rules import RULES

    if list_rules:
        for known in RULES.values():
            typer.echo(f"{known.id:<40} {known.severity:<8} {known.summary}\n{'':<49}{known.source}")
        return
    if log is None:
        raise UserError("name the log to check", "e.g. herald lint mcp-wire.jsonl (or - for standard input)")
    try:
        chosen = select(rule or [], ignore or [])
    except UnknownRule as unknown:
        raise UserError(str(unknown)) from None
    name = "<stdin>" if str(log) == "-" else str(log)
    with _lines(log) as lines, _output(output) as out:
        report: Report
        if output_format is Format.json:
            report = JsonReport(out, name, max_per_rule)
        elif output_format is Format.sarif:
            report = SarifReport(out, name, max_per_rule, version=metadata.version("herald"))
        else:
            report = TextReport(out, name, max_per_rule, color=None if output is None else False)
        records = lint_stream(lines, report.add, chosen)
        report.close(records)
    failing = {"error": ("error",), "warning": ("error", "warning"), "never": ()}[fail_on.value]
    if any(report.tally.by_severity(severity) for severity in failing):
        raise typer.Exit(1)


@contextmanager
def _lines(log: Path) -> Iterator[IO[bytes]]:
    if str(log) == "-":
        yield sys.stdin.buffer
        return
    if log.is_dir():
        raise UserError(f"{log} is a directory, not a message log")
    try:
        file = log.open("rb")
    except FileNotFoundError:
        raise UserError(f"{log} does not exist", "Record one with herald record, or --message-log.") from None
    except OSError as failed:
        raise UserError(f"{log} cannot be read: {failed.strerror or failed}") from None
    with file:
        yield file


@contextmanager
def _output(path: Path | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        return
    writable(path, "--output")
    with path.open("w", encoding="utf-8") as out:
        yield out


# -- log view / schema -------------------------------------------------------------------------


@log_app.command("view")
def view(
    log: Annotated[Path, typer.Argument(help="The message log to show (- for standard input).")],
    mermaid_diagram: Annotated[
        bool, typer.Option("--mermaid", help="Write one conversation as a Mermaid sequence diagram.")
    ] = False,
    session: Annotated[
        str | None, typer.Option(help="The conversation to show: a session id, an HTTP exchange, stdio-…")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="With --mermaid: draw at most this many messages.")] = 200,
) -> None:
    """A timeline of the log: who sent what, when, and how long each answer took."""
    from rich.console import Console
    from rich.markup import escape

    from herald.wire.timeline import conversations, format_step, mermaid, steps

    with _lines(log) as lines:
        timeline = list(steps(lines)) if mermaid_diagram else None
        if timeline is not None:
            known = conversations(timeline)
            if not known:
                raise UserError(f"{log} has no messages to draw")
            chosen = session or known[0]
            if chosen not in known:
                raise UserError(f"no conversation {chosen!r} in {log}", f"It has: {', '.join(known[:10])}")
            typer.echo(mermaid(timeline, chosen, limit), nl=False)
            return
        console = Console(highlight=False, soft_wrap=True)
        styles = {
            "request": "bold",
            "error": "red",
            "result": "green",
            "unparsed": "red",
            "unreadable": "red",
        }
        for step in steps(lines):
            if session is not None and step.conversation != session:
                continue
            style = styles.get(step.kind, "dim" if step.kind in ("http", "end", "start") else "")
            text = escape(format_step(step))
            console.print(f"[{style}]{text}[/]" if style else text)


@log_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of a message log record."""
    from herald.wire.format import schema as record_schema

    typer.echo(json.dumps(record_schema(), indent=2))


def main() -> None:
    run_command(app)
