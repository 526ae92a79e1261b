"""The server a `giftgenius` command talks to: the one at `--url`, or a private one it starts.

The private server keeps its jobs in memory: it lives only as long as the command, and
opening the shared store would make it fail, at start-up, the jobs a long-running server
on the same file is still running.
"""

from __future__ import annotations

import sys

from herald.cli.connecting import Target

#: The private server `call` and `bulk` start when no URL is given.
SPAWNED_SERVER = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]
#: How the private server is named in messages.
SPAWNED = "the GiftGenius server this command started"


def giftgenius_target(url: str | None, spawn: list[str] = SPAWNED_SERVER) -> Target:
    """The server at `url`, or a private one started with `spawn`; hints say `giftgenius job …`."""

    def again(verb: str, job_id: str) -> str:
        return f"giftgenius job {verb} {job_id} --url {url}"

    return Target(
        url=url,
        spawn=spawn,
        name=SPAWNED,
        start_hint="Run `giftgenius serve --stdio` to see why.",
        again=again,
    )
