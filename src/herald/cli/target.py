"""What `herald call|read|prompt|inspect|job` talk to: TARGET, a URL or a server file.

An `http(s)://` URL is a running server. Anything else is a server file as `herald run`
takes it, started over stdio for the one command: with its jobs in memory when the
command may start one (it follows it to its end, since the server stops with it), or on
the server's own store when it only looks at jobs another run of it started.
"""

from __future__ import annotations

import re
import sys

from herald.cli.arguments import checked_url
from herald.cli.connecting import Target
from herald.cli.loading import server_file

__all__ = ["target_of"]

#: A scheme and a colon: a URL, perhaps misspelt, never a file.
_LOOKS_LIKE_A_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def target_of(text: str, *, on_its_store: bool = False) -> Target:
    """The server TARGET names. `on_its_store`: a started server opens the store its own
    runs keep jobs in, and runs none of them (`herald job` looking at a job)."""

    def again(verb: str, job_id: str) -> str:
        return f"herald job {verb} {text} {job_id}"

    if _LOOKS_LIKE_A_URL.match(text):
        return Target(checked_url(text, "TARGET"), [], text, "", again)
    file = server_file(text)
    spawn = [sys.executable, "-m", "herald", "run", str(file), "--quiet"]
    spawn += ["--no-worker"] if on_its_store else ["--store", "memory"]
    return Target(
        url=None,
        spawn=spawn,
        name=f"the server {file} this command started",
        start_hint=f"Run `herald run {file}` to see why.",
        again=again,
    )
