"""Following a job on a server: its live bar, how it ended, and what a lost server means.

A job outlives any one connection. While the server is out of reach the bar says
"connection lost, retrying…" with the attempt count; once it is back, following resumes
from the job store, so a job that ended meanwhile is still seen to its end. Giving up
names the server and the job id and how to fetch the result later, because the job
itself goes on without the command. Shared by `herald job` and `giftgenius job`/`bulk`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from herald.cli.connecting import Target
from herald.cli.problems import UserError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from herald.client import Client, JobEvent

__all__ = [
    "Documents",
    "Whereabouts",
    "document_body",
    "follow",
    "keep_result",
    "print_status",
    "require_completed",
    "run_watch",
    "say_ending",
    "say_lost",
    "status_of",
    "write_result",
]


async def status_of(client: Client, job_id: str, where: str) -> dict[str, Any]:
    """`get_job_status` of `job_id`; an id the server does not know is the user's mistake."""
    from herald.client import ServerError

    try:
        return await client.job_status(job_id)
    except ServerError as error:
        raise UserError(f"{where} knows no job {job_id!r}: {error.message}") from None


@dataclass(frozen=True)
class Whereabouts:
    """What a message about a lost server must name: where, which job, and for how long we tried."""

    target: Target
    job_id: str
    retry_for: float

    @property
    def url(self) -> str | None:
        return self.target.url

    def gave_up(self, why: str) -> UserError:
        if self.url is None:
            return UserError(
                f"{self.target.name} stopped ({why}); the job {self.job_id} stopped with it", exit_code=1
            )
        return UserError(
            f"lost {self.url} and could not reach it again for {self.retry_for:.0f} s ({why})",
            f"Job {self.job_id} goes on there. When the server is back, save its result with: "
            f"{self.fetch_later()}",
            exit_code=1,
        )

    def forgotten(self, why: str) -> UserError:
        """The server answers, but no longer knows the job: it restarted without its store."""
        if self.url is None:
            return UserError(
                f"{self.target.name} stopped, and the job {self.job_id} with it ({why})", exit_code=1
            )
        return UserError(
            f"{self.url} no longer knows job {self.job_id} ({why})",
            "Was the server restarted on another --store (or on `memory`), or the job forgotten "
            "after its retention?",
            exit_code=1,
        )

    def fetch_later(self) -> str:
        return self.target.again("result", self.job_id)


async def follow(client: Client, job_id: str, console: Console, where: Whereabouts) -> JobEvent:
    """Follow `job_id` with a live bar to its terminal event; a lost server is said on the bar."""
    from herald.client import ConnectionLost, JobTrackingError, ServerError

    with _bar(console) as bar:
        task = bar.add_task("queued", total=100, eta="-")
        screen = _Screen(bar, task, console, where.target.where)
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
        say_lost(self.console, self.where, attempt, lost)
        self.bar.update(self.task, description=f"connection lost, retrying… ({attempt})")

    def reconnected(self) -> None:
        self.console.print(f"reconnected to {self.where}", highlight=False, markup=False)
        self.bar.update(self.task, description=self.stage)


def say_lost(console: Console, where: str, attempt: int, lost: Exception) -> None:
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


#: Where each document of a job's result goes: its resource URI, and the file to write.
Documents = list[tuple[str, Path]]


async def keep_result(
    client: Client,
    final: JobEvent,
    documents: Callable[[str], Documents],
    console: Console,
    where: Whereabouts,
) -> str:
    """Say how the job ended and, when it completed, write the `documents` of its result URI."""
    outcome = say_ending(console, final)
    if outcome == "completed":
        await write_result(client, documents(str(final.payload["resultResourceId"])), console, where)
    return outcome


async def write_result(client: Client, documents: Documents, console: Console, where: Whereabouts) -> str:
    """Read each document of a job's result and write it to its file.

    Reading is safe to repeat, so a server lost mid-read is read from again once back.
    Nothing is written until every document is read.
    """
    from herald.client import ConnectionLost

    contents: list[str | bytes] = []
    name = where.target.where
    client.on_retry = lambda attempt, lost: say_lost(console, name, attempt, lost)
    client.on_reconnected = lambda: console.print(f"reconnected to {name}", highlight=False, markup=False)
    try:
        for uri, _ in documents:
            document = await client.request_again("resources/read", {"uri": uri})
            contents.append(document_body(document))
    except ConnectionLost as lost:
        raise where.gave_up(str(lost)) from None
    finally:
        client.on_retry = client.on_reconnected = None
    for (_, path), content in zip(documents, contents, strict=True):
        try:
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        except OSError as exc:
            raise UserError(
                f"cannot write {path}: {exc.strerror or exc}",
                f"The result stays on the server: {where.fetch_later()} --out OTHER.json",
            ) from None
    written = " and ".join(str(path) for _, path in documents)
    console.print(f"Wrote {written}", highlight=False, markup=False)
    return "completed"


def print_status(console: Console, job_id: str, status: dict[str, Any], save_hint: str) -> None:
    """A job's status as a person reads it: where it is, and its result or error."""
    stage = f", {status['stage']}" if status.get("stage") else ""
    console.print(
        f"job {job_id}: {status['status']} ({status['percentage']:.0f}%{stage})",
        highlight=False,
        markup=False,
    )
    if status.get("resultResourceId"):
        console.print(f"  result: {status['resultResourceId']}", highlight=False, markup=False)
        console.print(f"  save it: {save_hint}", highlight=False, markup=False, soft_wrap=True)
    error = status.get("error")
    if isinstance(error, dict):
        console.print(f"  error: {error.get('message', '')}", highlight=False, markup=False)


def require_completed(status: dict[str, Any], job_id: str, wait_hint: str) -> None:
    """A `UserError` (status 1) unless the job completed: still running, or ended otherwise."""
    if status["status"] in ("pending", "running"):
        raise UserError(
            f"job {job_id} is still {status['status']} ({status['percentage']:.0f}%)", wait_hint, exit_code=1
        )
    if status["status"] != "completed":
        error = status.get("error") or {}
        message = f"job {job_id} {status['status']}"
        raise UserError(f"{message}: {error['message']}" if error.get("message") else message, exit_code=1)


def run_watch(
    target: Target,
    job_id: str,
    *,
    modern: bool,
    retry_for: float,
    documents: Callable[[str], Documents] | None = None,
) -> None:
    """`job watch`: a live bar to the job's end, then its `documents` written, if given.

    Ctrl-C stops watching (status 130), never the job; a job that did not complete is 1.
    """
    import asyncio

    import typer
    from rich.console import Console

    from herald.cli.connecting import connected

    console = Console(stderr=True)
    where = Whereabouts(target, job_id, retry_for)

    async def watch() -> str:
        async with connected(target, modern=modern, retry_for=retry_for) as client:
            await status_of(client, job_id, target.where)  # an unknown id is said before a bar is drawn
            final = await follow(client, job_id, console, where)
            if documents is None:
                return say_ending(console, final)
            return await keep_result(client, final, documents, console, where)

    try:
        outcome = asyncio.run(watch())
    except KeyboardInterrupt:
        console.print(f"Stopped watching; job {job_id} goes on.", highlight=False, markup=False)
        raise typer.Exit(130) from None
    if outcome != "completed":
        raise typer.Exit(1)


def document_body(document: dict[str, Any]) -> str | bytes:
    """What a `resources/read` answer holds: its text, or its blob's bytes."""
    import base64

    first = (document.get("contents") or [{}])[0]
    if "blob" in first:
        return base64.b64decode(first["blob"])
    return str(first.get("text", ""))
