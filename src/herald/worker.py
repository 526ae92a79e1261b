"""A process that only runs jobs: it takes the jobs serve-only replicas queue in a shared store.

It serves nothing. It holds a lease, claims queued jobs while it has free slots, takes
over the jobs of workers that stopped, and on SIGINT or SIGTERM stops its running jobs the
way a server does at shutdown (they end `interrupted`, or wait for another worker to
resume them once the lease lapses, if the process is killed instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

from herald.server.app import Server


async def serve_jobs(server: Server, stop: asyncio.Event) -> None:
    """Run the server's jobs until `stop` is set."""
    await server.start_jobs()
    try:
        await stop.wait()
    finally:
        await server.stop_jobs()


def run_worker(server: Server) -> None:
    """Run jobs until interrupted (Ctrl-C, SIGTERM)."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # not on every platform
                loop.add_signal_handler(signum, stop.set)
        await serve_jobs(server, stop)

    asyncio.run(main())
