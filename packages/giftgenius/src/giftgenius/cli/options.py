"""Checks of what a person typed, made before any work starts.

A mistake found after a job has run loses the job's result (an `--out` in a directory
that does not exist was only noticed when writing), so everything that can be checked
up front is: output paths, input files and durations here, URLs and `NAME=VALUE`
arguments in `herald.cli.arguments`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from herald.cli.checks import writable
from herald.cli.problems import UserError

#: Units a duration on the command line may end with, in seconds.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: The message limit `giftgenius serve` starts with, in bytes.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
#: Where `giftgenius serve` listens by default, for the commands that talk to a running one.
DEFAULT_URL = "http://127.0.0.1:8000/mcp"


def parse_duration(text: str, option: str) -> float:
    """`7d`, `12h`, `30m`, `90s` or plain seconds, as seconds; a clear error for anything else."""
    value = text.strip().lower()
    unit = DURATION_UNITS.get(value[-1:]) if value else None
    number = value[:-1] if unit is not None else value
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise typer.BadParameter(
            f"{text!r} is not a duration: write a number with d, h, m or s after it, e.g. 7d or 90s",
            param_hint=option,
        )
    return seconds


def result_files(path: Path, option: str = "--out", *, not_over: Path | None = None) -> tuple[Path, Path]:
    """Where a job's JSON result and its CSV export go: `path`, and a `.csv` beside it.

    Checked before the job runs, not after: a missing directory, a name that is the CSV
    itself, or one that would overwrite the input (`not_over`) is said now.
    """
    if path.suffix.lower() == ".csv":
        raise UserError(
            f"{option} {path} names the JSON result, and the CSV export goes beside it",
            f"Name the JSON file, e.g. {option} {path.with_suffix('.json')}",
        )
    files = (path, path.with_suffix(".csv"))
    for file in files:
        writable(file, option)
        if not_over is not None and _same(file, not_over):
            raise UserError(
                f"{option} {path} would write {file} over the input",
                f"Pick another name, e.g. {option} {path.with_name(path.stem + '.gifts.json')}",
            )
    return files


def _same(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == other.resolve()
    except OSError:
        return False


def readable_file(path: Path) -> bytes:
    """The bytes of an input file; a directory, a missing or unreadable file is said plainly."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path} does not exist", "Give the path of a CSV file.") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a CSV file", "Give the path of a CSV file.") from None
    except PermissionError:
        raise UserError(f"{path} cannot be read: permission denied") from None
    except OSError as exc:
        raise UserError(f"{path} cannot be read: {exc.strerror or exc}") from None
