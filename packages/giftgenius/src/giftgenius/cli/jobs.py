"""`bulk` and `job status|watch|result`: start a job, follow it, and keep what it made.

Following is herald's (`herald.cli.following`: the bar, a lost server, how a job ended);
what is GiftGenius's own is here: the bulk analysis it starts, and that a result is a
JSON document with a CSV export beside it, both written to disk.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from giftgenius.cli.options import DEFAULT_MAX_BYTES, DEFAULT_URL, readable_file, result_files
from giftgenius.cli.target import SPAWNED, SPAWNED_SERVER, giftgenius_target
from herald.cli.connecting import connected
from herald.cli.flags import JsonOption, ModernOption, UrlOption, print_json
from herald.cli.following import (
    Documents,
    Whereabouts,
    follow,
    keep_result,
    print_status,
    require_completed,
    run_watch,
    status_of,
    write_result,
)
from herald.cli.problems import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from herald.client import Client, ServerError

#: How long a command keeps trying to reach a server it lost before it gives up, by default.
DEFAULT_RETRY_SECONDS = 60.0

RetryOption = Annotated[
    float,
    typer.Option(min=1, help="Keep trying this many seconds to reach a server that went away."),
]
JobUrlOption = Annotated[str, typer.Option(help="The server that runs the job.")]
OutOption = Annotated[
    Path | None, typer.Option(help="Where to write the result (JSON; a CSV goes beside it).")
]


# -- bulk --------------------------------------------------------------------------------------------


def bulk(
    csv_file: Annotated[Path, typer.Argument(help="CSV with header name,department,interests,budget")],
    url: UrlOption = None,
    occasion: Annotated[str, typer.Option(help="The occasion for everyone.")] = "holiday",
    budget: Annotated[float, typer.Option(min=0.01, help="USD per person when a row has no budget.")] = 50.0,
    out: OutOption = None,
    modern: ModernOption = False,
    max_message_bytes: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Raise the message limit of the server bulk starts (its --max-message-bytes); "
            f"default {DEFAULT_MAX_BYTES}. Not with --url: that server has its own.",
        ),
    ] = None,
    retry_for: RetryOption = DEFAULT_RETRY_SECONDS,
) -> None:
    """Pick gifts for everyone in a CSV, with a live progress bar. Ctrl-C cancels the job."""
    from rich.console import Console

    from giftgenius.bulk import BulkInputError
    from giftgenius.spreadsheet import decode_csv

    console = Console(stderr=True)
    if url is not None and max_message_bytes is not None:
        raise UserError(
            "--max-message-bytes sets the limit of the server bulk starts; the server at --url has its own",
            "Start that one with `giftgenius serve --max-message-bytes N`.",
        )
    if not occasion.strip():
        raise UserError("--occasion is empty", "Name the occasion, e.g. --occasion birthday.")
    try:
        decoded = decode_csv(readable_file(csv_file), name=str(csv_file))
    except BulkInputError as problem:
        raise UserError(problem.message, problem.hint) from None
    files = result_files(out or csv_file.with_suffix(".gifts.json"), not_over=csv_file)
    if decoded.notice:
        console.print(f"note: {decoded.notice}", markup=False, soft_wrap=True)
    spawn = SPAWNED_SERVER
    if max_message_bytes is not None:
        spawn = [*SPAWNED_SERVER, "--max-message-bytes", str(max_message_bytes)]
    # The file goes as the widget sends one, in parts after the start, so no message holds
    # it whole: a 10 MB file stays within any server's message limit. It goes as UTF-8,
    # whatever it was on disk (the note above says what it was read as).
    data = decoded.text.encode("utf-8")
    upload = {"size": len(data), "file_name": csv_file.name, "mime_type": "text/csv"}
    arguments = {"upload": upload, "occasion": occasion, "budget_per_person": budget}
    run = BulkRun(console, url, spawn, modern, retry_for)
    try:
        outcome = asyncio.run(run.start_and_follow(arguments, files, data))
    except KeyboardInterrupt:  # before the job was started, or while it was being cancelled
        outcome = "cancelled" if run.cancel_asked else "stopped"
    _finish(console, outcome, run)


def _finish(console: Console, outcome: str, run: BulkRun) -> None:
    if outcome == "cancelled":
        console.print("[yellow]Cancelled.[/yellow] The job was asked to stop.")
        raise typer.Exit(130)
    if outcome == "stopped":
        if run.job_id is None:
            console.print("Stopped before the server said a job had started.")
        else:
            console.print(
                f"Stopped; job {run.job_id} may go on. Cancel it with: giftgenius call cancel_job "
                f"--arg jobId={run.job_id} --url {run.url}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        raise typer.Exit(130)
    if outcome != "completed":
        raise typer.Exit(1)


@dataclass
class BulkRun:
    """One `bulk` command: where it runs the job, how it shows it, and how far it got."""

    console: Console
    url: str | None
    spawn: list[str]
    modern: bool
    retry_for: float
    job_id: str | None = None
    #: Set once the server acknowledged the request to cancel the job.
    cancel_asked: bool = False

    async def start_and_follow(self, arguments: dict[str, Any], files: tuple[Path, Path], data: bytes) -> str:
        """Start the job, send it the file, follow it to its end, write its result; the way it ended."""
        from herald.client import ServerError

        target = giftgenius_target(self.url, self.spawn)
        async with connected(target, modern=self.modern, retry_for=self.retry_for) as client:
            try:
                started = await client.call_tool("start_bulk_gift_analysis", arguments)
            except ServerError as error:
                raise refusal(error, spawned=self.url is None) from None
            if started.get("isError"):
                raise UserError(f"the server refused the bulk request: {result_text(started)}")
            self.job_id = job_id = str(started["structuredContent"]["jobId"])
            self.console.print(f"job {job_id} started", highlight=False)
            if self.url is not None:
                self.console.print(
                    f"  follow it elsewhere: giftgenius job watch {job_id} --url {self.url}",
                    highlight=False,
                    soft_wrap=True,
                )
            where = Whereabouts(target, job_id, self.retry_for)
            try:
                await self._send(client, job_id, data)
                final = await follow(client, job_id, self.console, where)
            except asyncio.CancelledError:  # Ctrl-C
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                return await self._cancel(client, job_id)
            return await keep_result(client, final, documents(files), self.console, where)

    async def _send(self, client: Client, job_id: str, data: bytes) -> None:
        """Send the job its file, part by part, as the widget does; a part is safe to send
        twice, so one lost with its server is sent again once the server is back."""
        from herald.client import ServerError
        from herald.server.uploads import SEND_PART_TOOL, encoded_parts

        try:
            for part in encoded_parts(data):
                call = {"name": SEND_PART_TOOL, "arguments": {"jobId": job_id, **part}}
                sent = await client.request_again("tools/call", call)
                if sent.get("isError"):
                    raise UserError(f"the server refused the file: {result_text(sent)}")
        except ServerError as error:
            raise refusal(error, spawned=self.url is None) from None

    async def _cancel(self, client: Client, job_id: str) -> str:
        from herald.client import ConnectionLost, ServerError

        try:
            await client.call_tool("cancel_job", {"jobId": job_id})
        except (ServerError, ConnectionLost) as exc:
            self.console.print(
                f"Could not ask {self.url or SPAWNED} to cancel job {job_id} ({exc}); it may go on.",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            return "stopped"
        self.cancel_asked = True
        return "cancelled"


# -- job status | watch | result ----------------------------------------------------------------------

job_app = typer.Typer(
    no_args_is_help=True, help="Look at a job on a running server: its status, its progress, its result."
)


@job_app.command("status")
def job_status(
    job_id: Annotated[str, typer.Argument(help="The job's id, as the job tool returned it")],
    url: JobUrlOption = DEFAULT_URL,
    modern: ModernOption = False,
    as_json: JsonOption = False,
) -> None:
    """Print where a job is: its status, progress and stage, and its result when it has one."""
    from rich.console import Console

    async def ask() -> dict[str, Any]:
        async with connected(giftgenius_target(url), modern=modern) as client:
            return await status_of(client, job_id, url)

    status = asyncio.run(ask())
    console = Console()
    if as_json:
        print_json(console, status)
        return
    print_status(console, job_id, status, f"giftgenius job result {job_id} --url {url}")


@job_app.command("watch")
def job_watch(
    job_id: Annotated[str, typer.Argument(help="The job's id")],
    url: JobUrlOption = DEFAULT_URL,
    modern: ModernOption = False,
    out: Annotated[
        Path | None, typer.Option(help="Also write its result here (JSON; a CSV beside it).")
    ] = None,
    retry_for: RetryOption = DEFAULT_RETRY_SECONDS,
) -> None:
    """Follow a job's progress until it ends (Ctrl-C stops watching; the job goes on)."""
    files = result_files(out) if out is not None else None
    keep = documents(files) if files is not None else None
    run_watch(giftgenius_target(url), job_id, modern=modern, retry_for=retry_for, documents=keep)


@job_app.command("result")
def job_result(
    job_id: Annotated[str, typer.Argument(help="The job's id")],
    url: JobUrlOption = DEFAULT_URL,
    modern: ModernOption = False,
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write the JSON (a CSV goes beside it). Default: JOB_ID.gifts.json"),
    ] = None,
    retry_for: RetryOption = DEFAULT_RETRY_SECONDS,
) -> None:
    """Write the result of a finished job: its JSON document and its CSV export."""
    from rich.console import Console

    console = Console(stderr=True)
    # A job id is the server's to choose: only its plain characters make the default file name.
    default = Path(re.sub(r"[^A-Za-z0-9._-]", "_", job_id).lstrip(".") + ".gifts.json")
    files = result_files(out or default, "--out" if out else "the default --out")
    target = giftgenius_target(url)
    where = Whereabouts(target, job_id, retry_for)

    async def fetch() -> str:
        async with connected(target, modern=modern, retry_for=retry_for) as client:
            status = await status_of(client, job_id, url)
            require_completed(
                status, job_id, f"Wait for it: giftgenius job watch {job_id} --url {url} --out {files[0]}"
            )
            return await write_result(client, documents(files)(status["resultResourceId"]), console, where)

    asyncio.run(fetch())


def documents(files: tuple[Path, Path]) -> Callable[[str], Documents]:
    """A bulk result's two documents, the JSON result and its CSV export, and their files."""

    def of(result_uri: str) -> Documents:
        return [(result_uri, files[0]), (result_uri.replace("result.json", "result.csv"), files[1])]

    return of


def result_text(result: dict[str, Any]) -> str:
    """The text blocks of a tool result, joined: what the server said."""
    return " ".join(
        block.get("text", "") for block in result.get("content", []) if block.get("type") == "text"
    )


def refusal(error: ServerError, *, spawned: bool) -> UserError:
    """What to tell the user when the server refused the bulk request.

    A refusal for size gets the numbers and the one flag that helps: `bulk
    --max-message-bytes` when bulk started the server, `giftgenius serve
    --max-message-bytes` for the server at --url. Over stdio the server's error carries
    the size and the limit as data; over HTTP it is a 413 whose message names the limit.
    """
    data = error.data if isinstance(error.data, dict) else {}
    size, limit = data.get("size"), data.get("limit")
    if not (error.http_status == 413 or (isinstance(size, int) and isinstance(limit, int))):
        return UserError(f"the server refused the bulk request: {error.message}")
    if spawned and isinstance(size, int) and isinstance(limit, int):
        room = -(-size // 2**20) * 2**20  # the size rounded up to whole MiB
        return UserError(
            f"the CSV is too large to send: the request is {size} bytes and the server's limit "
            f"is {limit} bytes",
            f"Run bulk again with --max-message-bytes {room} (or more) to raise it.",
        )
    return UserError(
        f"the server refused the CSV as too large: {error.message}",
        "Start that server with a larger `giftgenius serve --max-message-bytes` to accept it.",
    )
