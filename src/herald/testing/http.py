"""A herald server on Streamable HTTP inside the test's own event loop.

Running uvicorn in the same loop as the test lets the test count the server's tasks and
reach its session table (`app.state.sessions`), which a subprocess would hide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from herald.server.app import Server
from herald.stores.eventlog import EventLog
from herald.stores.sessions import SessionStore
from herald.taskgroup import task_group
from herald.transports.http import HttpConfig, create_app, uvicorn_settings

#: How long start-up and shutdown may take before the test calls the server stuck.
STARTUP_SECONDS = 20.0


@asynccontextmanager
async def serve_http(
    server: Server,
    config: HttpConfig | None = None,
    log: EventLog | None = None,
    sessions: SessionStore | None = None,
) -> AsyncIterator[tuple[str, Starlette]]:
    """Serve `server` on a free loopback port until the block ends; yields its URL and the app.

    `log` is the event log of the HTTP sessions (in memory by default) and `sessions` the
    store replicas share them through (none by default); the app closes both.
    """
    import uvicorn

    config = config or HttpConfig()
    app = create_app(server, config, log, sessions)
    settings = uvicorn_settings(config, host="127.0.0.1", port=0) | {"timeout_graceful_shutdown": None}
    http_server = uvicorn.Server(uvicorn.Config(app, **settings))
    async with task_group() as tasks:  # the server is a task of the caller's block
        serving = tasks.create_task(http_server.serve())
        try:
            async with asyncio.timeout(STARTUP_SECONDS):
                while not http_server.started:  # noqa: ASYNC110  # uvicorn offers readiness only as a flag
                    await asyncio.sleep(0.01)
            port = http_server.servers[0].sockets[0].getsockname()[1]
            yield f"http://127.0.0.1:{port}{config.path}", app
        finally:
            http_server.should_exit = True
            await asyncio.wait_for(asyncio.shield(serving), STARTUP_SECONDS)
