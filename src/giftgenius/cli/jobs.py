"""`bulk` and `job status|watch|result`: start a job, follow it, and keep what it made.

A job outlives any one connection. While the server is out of reach the bar says
"connection lost, retrying…" with the attempt count; once it is back, following resumes
from the job store, so a job that ended meanwhile is still written to disk. Giving up
names the URL and the job id and how to fetch the result later, because the job itself
goes on without the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from giftgenius.cli.connecting import SPAWNED, SPAWNED_SERVER, connected
from giftgenius.cli.flags import JsonOption, ModernOption, UrlOption, print_json
from giftgenius.cli.options import DEFAULT_MAX_BYTES, DEFAULT_URL, readable_file, result_files
from giftgenius.cli.problems import UserError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from herald.client import Client, JobEvent, ServerError

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
    arguments = {"csv": decoded.text, "occasion": occasion, "budget_per_person": budget}
    run = BulkRun(console, url, spawn, modern, retry_for)
    try:
        outcome = asyncio.run(run.start_and_follow(arguments, files))
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

    async def start_and_follow(self, arguments: dict[str, Any], files: tuple[Path, Path]) -> str:
        """Start the job, follow it to its end, write its result; the way it ended."""
        from herald.client import ServerError

        async with connected(
            self.url, modern=self.modern, spawn=self.spawn, retry_for=self.retry_for
        ) as client:
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
            where = Whereabouts(self.url, job_id, self.retry_for)
            try:
                final = await follow(client, job_id, self.console, where)
            except asyncio.CancelledError:  # Ctrl-C
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                return await self._cancel(client, job_id)
            return await keep_result(client, final, files, self.console, where)

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
        async with connected(url, modern=modern) as client:
            return await _status(client, job_id, url)

    status = asyncio.run(ask())
    console = Console()
    if as_json:
        print_json(console, status)
        return
    stage = f", {status['stage']}" if status.get("stage") else ""
    console.print(
        f"job {job_id}: {status['status']} ({status['percentage']:.0f}%{stage})",
        highlight=False,
        markup=False,
    )
    if status.get("resultResourceId"):
        console.print(f"  result: {status['resultResourceId']}", highlight=False, markup=False)
        console.print(
            f"  save it: giftgenius job result {job_id} --url {url}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    error = status.get("error")
    if isinstance(error, dict):
        console.print(f"  error: {error.get('message', '')}", highlight=False, markup=False)


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
    from rich.console import Console

    console = Console(stderr=True)
    files = result_files(out) if out is not None else None
    where = Whereabouts(url, job_id, retry_for)

    async def watch() -> str:
        async with connected(url, modern=modern, retry_for=retry_for) as client:
            await _status(client, job_id, url)  # an unknown id is said before a bar is drawn
            final = await follow(client, job_id, console, where)
            if files is None:
                return say_ending(console, final)
            return await keep_result(client, final, files, console, where)

    try:
        outcome = asyncio.run(watch())
    except KeyboardInterrupt:
        console.print(f"Stopped watching; job {job_id} goes on.", highlight=False, markup=False)
        raise typer.Exit(130) from None
    if outcome != "completed":
        raise typer.Exit(1)


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
    where = Whereabouts(url, job_id, retry_for)

    async def fetch() -> str:
        async with connected(url, modern=modern, retry_for=retry_for) as client:
            status = await _status(client, job_id, url)
            if status["status"] in ("pending", "running"):
                raise UserError(
                    f"job {job_id} is still {status['status']} ({status['percentage']:.0f}%)",
                    f"Wait for it: giftgenius job watch {job_id} --url {url} --out {files[0]}",
                    exit_code=1,
                )
            if status["status"] != "completed":
                error = status.get("error") or {}
                message = f"job {job_id} {status['status']}"
                raise UserError(
                    f"{message}: {error['message']}" if error.get("message") else message, exit_code=1
                )
            return await write_result(client, status["resultResourceId"], files, console, where)

    asyncio.run(fetch())


async def _status(client: Client, job_id: str, url: str) -> dict[str, Any]:
    """`get_job_status` of `job_id`; an id the server does not know is the user's mistake."""
    from herald.client import ServerError

    try:
        return await client.job_status(job_id)
    except ServerError as error:
        raise UserError(f"{url} knows no job {job_id!r}: {error.message}") from None


# -- following and keeping ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Whereabouts:
    """What a message about a lost server must name: where, which job, and for how long we tried."""

    url: str | None
    job_id: str
    retry_for: float

    def gave_up(self, why: str) -> UserError:
        if self.url is None:
            return UserError(f"{SPAWNED} stopped ({why}); the job {self.job_id} stopped with it", exit_code=1)
        return UserError(
            f"lost {self.url} and could not reach it again for {self.retry_for:.0f} s ({why})",
            f"Job {self.job_id} goes on there. When the server is back, save its result with: "
            f"{self.fetch_later()}",
            exit_code=1,
        )

    def forgotten(self, why: str) -> UserError:
        """The server answers, but no longer knows the job: it restarted without its store."""
        if self.url is None:
            return UserError(f"{SPAWNED} stopped, and the job {self.job_id} with it ({why})", exit_code=1)
        return UserError(
            f"{self.url} no longer knows job {self.job_id} ({why})",
            "Was the server restarted on another --store (or on `memory`), or the job forgotten "
            "after its retention?",
            exit_code=1,
        )

    def fetch_later(self) -> str:
        return f"giftgenius job result {self.job_id} --url {self.url}"


async def follow(client: Client, job_id: str, console: Console, where: Whereabouts) -> JobEvent:
    """Follow `job_id` with a live bar to its terminal event; a lost server is said on the bar."""
    from herald.client import ConnectionLost, JobTrackingError, ServerError

    with _bar(console) as bar:
        task = bar.add_task("queued", total=100, eta="-")
        screen = _Screen(bar, task, console, where.url or SPAWNED)
        client.on_retry, client.on_reconnected = screen.retrying, screen.reconnected
        try:
            async for event in client.job_events(job_id):
                screen.show(event)
                if event.kind in ("completed", "failed", "cancelled"):
                    return event
        except ConnectionLost as lost:
            raise where.gave_up(str(lost)) from None
        except (ServerError, JobTrackingError) as error:
            raise where.forgotten(str(error)) from None
        finally:
            client.on_retry = client.on_reconnected = None
    raise AssertionError("job_events ends with a terminal event")  # pragma: no cover


@contextlib.contextmanager
def _bar(console: Console) -> Iterator[Progress]:
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description:<10}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA {task.fields[eta]}"),
    )
    with Progress(*columns, console=console) as bar:
        yield bar


class _Screen:
    """The bar of one job, and what it says while the server is out of reach."""

    def __init__(self, bar: Progress, task: TaskID, console: Console, where: str) -> None:
        self.bar, self.task, self.console, self.where = bar, task, console, where
        self.stage = "queued"

    def show(self, event: JobEvent) -> None:
        if event.kind == "progress":
            eta = event.payload.get("etaSeconds")
            self.stage = _plain(str(event.payload.get("stage") or self.stage))
            self.bar.update(
                self.task,
                completed=event.payload["percentage"],
                description=self.stage,
                eta=f"{eta:.0f}s" if isinstance(eta, int | float) else "-",
            )
        elif event.kind == "started":
            self.stage = "running"
            self.bar.update(self.task, description=self.stage)
        elif event.kind == "completed":
            self.bar.update(self.task, completed=100, description="done", eta="0s")

    def retrying(self, attempt: int, lost: Exception) -> None:
        _say_lost(self.console, self.where, attempt, lost)
        self.bar.update(self.task, description=f"connection lost, retrying… ({attempt})")

    def reconnected(self) -> None:
        self.console.print(f"reconnected to {self.where}", highlight=False, markup=False)
        self.bar.update(self.task, description=self.stage)


def _say_lost(console: Console, where: str, attempt: int, lost: Exception) -> None:
    """The first failed attempt of an outage is said in a line; a bar, where there is one, counts the rest."""
    if attempt == 1:
        console.print(f"connection lost to {where}, retrying… ({lost})", highlight=False, markup=False)


def _plain(text: str) -> str:
    """Server text shown in a bar's description, which rich reads as markup: brackets escaped."""
    from rich.markup import escape

    return escape(text)


def say_ending(console: Console, final: JobEvent) -> str:
    """Print how a job ended; its kind."""
    if final.kind == "completed":
        console.print(final.payload.get("summary") or "Done.", highlight=False, markup=False)
        console.print(f"result: {final.payload.get('resultResourceId')}", highlight=False, markup=False)
        return "completed"
    error = final.payload.get("error") or {}
    console.print(
        f"The job {final.kind}: {error.get('message', '')}", style="red", highlight=False, markup=False
    )
    if error.get("hint"):
        console.print(f"hint: {error['hint']}", highlight=False, markup=False)
    return final.kind


async def keep_result(
    client: Client, final: JobEvent, files: tuple[Path, Path], console: Console, where: Whereabouts
) -> str:
    """Say how the job ended and, when it completed, write its result to `files`."""
    outcome = say_ending(console, final)
    if outcome == "completed":
        await write_result(client, str(final.payload["resultResourceId"]), files, console, where)
    return outcome


async def write_result(
    client: Client, result_uri: str, files: tuple[Path, Path], console: Console, where: Whereabouts
) -> str:
    """Read a job's JSON result and its CSV export, and write them to `files` (JSON, CSV).

    Reading is safe to repeat, so a server lost mid-read is read from again once back.
    """
    from herald.client import ConnectionLost

    uris = (result_uri, result_uri.replace("result.json", "result.csv"))
    contents: list[str] = []
    name = where.url or SPAWNED
    client.on_retry = lambda attempt, lost: _say_lost(console, name, attempt, lost)
    client.on_reconnected = lambda: console.print(f"reconnected to {name}", highlight=False, markup=False)
    try:
        for uri in uris:
            document = await client.request_again("resources/read", {"uri": uri})
            contents.append(document["contents"][0]["text"])
    except ConnectionLost as lost:
        raise where.gave_up(str(lost)) from None
    finally:
        client.on_retry = client.on_reconnected = None
    for path, content in zip(files, contents, strict=True):
        try:
            path.write_text(content, encoding="utf-8")
        except OSError as exc:
            raise UserError(
                f"cannot write {path}: {exc.strerror or exc}",
                f"The result stays on the server: {where.fetch_later()} --out OTHER.json",
            ) from None
    console.print(f"Wrote {' and '.join(str(path) for path in files)}", highlight=False, markup=False)
    return "completed"


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
