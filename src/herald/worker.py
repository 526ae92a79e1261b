"""A process that only runs jobs: it takes the jobs serve-only replicas queue in a shared store.

It serves no MCP. It holds a lease, claims queued jobs while it has free slots, takes
over the jobs of workers that stopped, and on SIGINT or SIGTERM stops the way a server
does: resumable jobs go back to the queue at once, for another worker to go on with from
their checkpoints, and the others get the server's shutdown grace to finish. A second
signal cuts the grace short (those jobs then end `interrupted`).

Given a listening socket (`probes`), it answers an orchestrator's probes there, as an
HTTP server does: `/healthz`, `/readyz` (503 while starting, draining or when the store
does not answer) and, with `metrics_path`, the metrics for Prometheus. That small HTTP
server leaves the signals to the worker: the first one drains, the second hurries.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Iterator
from typing import Any

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


def run_worker(server: Server, probes: socket.socket | None = None, metrics_path: str | None = None) -> None:
    """Run jobs until interrupted (Ctrl-C, SIGTERM); a second signal ends the grace.

    With `probes`, answer health probes (and `metrics_path`) on that socket meanwhile.
    """

    async def main() -> None:
        stop, hurry = asyncio.Event(), asyncio.Event()

        def signalled() -> None:
            server.draining = True  # `/readyz` says 503 from the first signal on
            (hurry if stop.is_set() else stop).set()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # not on every platform
                loop.add_signal_handler(signum, signalled)
        if probes is None:
            await serve_jobs(server, stop, hurry)
            return
        probe_server = _probe_server(server, metrics_path)
        async with asyncio.TaskGroup() as tasks:
            answering = tasks.create_task(probe_server.serve(sockets=[probes]))
            try:
                await serve_jobs(server, stop, hurry)
            finally:
                probe_server.should_exit = True
                await asyncio.shield(answering)

    asyncio.run(main())


def _probe_server(server: Server, metrics_path: str | None) -> Any:
    """A uvicorn server for the probes that installs no signal handlers of its own."""
    import uvicorn
    from starlette.applications import Starlette

    from herald.transports.http.health import health_routes
    from herald.transports.http.metrics import metrics_route

    routes = health_routes(server)
    if metrics_path is not None:
        routes.append(metrics_route(metrics_path))

    class ProbeServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the worker's own handlers stay: they drain the jobs

    config = uvicorn.Config(Starlette(routes=routes), lifespan="off", log_level="warning", access_log=False)
    return ProbeServer(config)
