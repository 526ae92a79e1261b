"""The `giftgenius` command run as a person runs it, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from giftgenius.cli import app
from herald.cli.checks import run_command

GIFTGENIUS = [sys.executable, "-m", "giftgenius"]
#: A CSV of one person, for commands that need a file.
PEOPLE = "name,department,interests,budget\nAna,Eng,hiking;coffee,40\n"
#: Wide columns, so that rich does not wrap the words a test looks for, and no colours.
WIDE = {**os.environ, "COLUMNS": "300", "NO_COLOR": "1"}


def run(*argv: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command's outcome, once it has ended by itself."""
    return subprocess.run(
        [*GIFTGENIUS, *argv], capture_output=True, text=True, timeout=timeout, check=False, env=WIDE, cwd=cwd
    )


def run_here(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command run in this process, as `main` runs it, for what it refuses before any work.

    No interpreter starts, so a mistake costs milliseconds. A crash is not turned into an
    exit status: it propagates, and fails the test with its traceback.
    """
    code = 0
    with CliRunner().isolation(env={"COLUMNS": "300", "NO_COLOR": "1"}) as (out, err, _):
        try:
            run_command(lambda: app(args=list(argv), prog_name="giftgenius"))
        except SystemExit as ended:
            code = ended.code if isinstance(ended.code, int) else 0 if ended.code is None else 1
        sys.stdout.flush()  # the streams the isolation put in place, over `out` and `err`
        sys.stderr.flush()
        said_out, said_err = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["giftgenius", *argv], code, said_out, said_err)


def said(done: subprocess.CompletedProcess[str]) -> str:
    """What the command printed, with rich's boxes and line breaks flattened."""
    text = (done.stdout + done.stderr).replace("│", " ").replace("╭", " ").replace("╰", " ")
    return " ".join(text.split())


def check(done: subprocess.CompletedProcess[str], *words: str, status: int = 2) -> None:
    text = said(done)
    assert done.returncode == status, text
    for word in words:
        assert word in text, text
    assert "Traceback" not in done.stderr + done.stdout
