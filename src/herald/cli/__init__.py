"""The `herald` command (`herald.cli.main`): serve a server file, talk to servers, record
and lint their traffic.

This package's `__init__` imports neither typer nor rich, so that `giftgenius serve` can
use the lean `herald.cli.checks` without loading them, and so that `main` can say in a
line that the command needs `herald[cli]` when they are not installed.
"""

from __future__ import annotations

import sys


def main() -> None:
    """The `herald` command; without `herald[cli]`, one line saying how to get it."""
    from herald.extras import MissingExtra, needs

    try:
        with needs("cli", "the herald command"):
            from herald.cli.main import main as run
    except MissingExtra as missing:
        print(f"error: {missing}", file=sys.stderr)
        raise SystemExit(2) from None
    run()
