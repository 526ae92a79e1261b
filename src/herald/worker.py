"""A process that only runs jobs: it takes the jobs serve-only replicas queue in a shared store.

It serves nothing. It holds a lease, claims queued jobs while it has free slots, takes
over the jobs of workers that stopped, and on SIGINT or SIGTERM stops the way a server
does: resumable jobs go back to the queue at once, for another worker to go on with from
their checkpoints, and the others get the server's shutdown grace to finish. A second
signal cuts the grace short (those jobs then end `interrupted`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

from herald.server.app import Server


async def serve_jobs(server: Server, stop: asyncio.Event, hurry: asyncio.Event | None = None) -> None:
    """Run the server's jobs until `stop` is set; `hurry` ends the shutdown grace early."""
    watcher: asyncio.Future[None] | None = None
    try:
        async with server.running():  # its lifespan, and its jobs
            try:
                await stop.wait()
            finally:
                # Owned here: it ends with the shutdown (the block's end) it may cut short.
                watcher = asyncio.ensure_future(_end_grace_when(hurry, server)) if hurry is not None else None
    finally:
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)


async def _end_grace_when(hurry: asyncio.Event, server: Server) -> None:
    await hurry.wait()
    server.jobs.end_grace()


def run_worker(server: Server) -> None:
    """Run jobs until interrupted (Ctrl-C, SIGTERM); a second signal ends the grace."""

    async def main() -> None:
        stop, hurry = asyncio.Event(), asyncio.Event()

        def signalled() -> None:
            (hurry if stop.is_set() else stop).set()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # not on every platform
                loop.add_signal_handler(signum, signalled)
        await serve_jobs(server, stop, hurry)

    asyncio.run(main())
