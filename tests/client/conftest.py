"""Real herald servers for the client tests: HTTP in-process under uvicorn, stdio as a subprocess."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import uvicorn

from herald import Server
from herald.jobs.events import all_schemas
from herald.runtime import JobContext
from herald.stores.sqlite import SqliteJobStore
from herald.testing import free_port
from herald.transports.http import HttpConfig, create_app

#: Gates the `gated` job waits on, opened by the tests.
GATES: dict[str, asyncio.Event] = {}

STDIO_SERVER = '''
import asyncio, sys
from herald import Server
from herald.runtime import JobContext
from herald.stores.sqlite import SqliteJobStore
from herald.transports.stdio import run_stdio

server = Server("stdio-jobs", job_shutdown_grace_seconds=0)
server.use_job_store(SqliteJobStore(sys.argv[1]))

@server.job()
async def count(to: int, ctx: JobContext) -> dict:
    """Counts to `to`, reporting each step."""
    for step in range(1, to + 1):
        await ctx.report_progress(100 * step / to, f"step {step}")
    return {"counted": to}

@server.job()
async def stuck(ctx: JobContext) -> dict:
    """Reports once, then waits until its server goes away."""
    await ctx.report_progress(10, "waiting")
    await asyncio.Event().wait()
    return {}

run_stdio(server)
'''


def gate(name: str) -> asyncio.Event:
    return GATES.setdefault(name, asyncio.Event())


def build_server(database: Path) -> Server:
    # No grace: a job cut short by a stop ends `interrupted` at once, which the tests follow.
    server = Server("client-jobs", job_shutdown_grace_seconds=0)
    server.use_job_store(SqliteJobStore(database))

    @server.job()
    async def count(to: int, ctx: JobContext) -> dict[str, Any]:
        """Counts to `to`, reporting each step."""
        for step in range(1, to + 1):
            await ctx.report_progress(100 * step / to, f"step {step}", eta_seconds=float(to - step))
        return {"counted": to, "summary": f"counted to {to}"}

    @server.job()
    async def gated(name: str, ctx: JobContext) -> dict[str, Any]:
        """Reports 25%, waits for the test to open gate `name`, then reports twice more."""
        await ctx.report_progress(25, "before the gate")
        await gate(name).wait()
        await ctx.report_progress(50, "through the gate")
        await ctx.report_progress(75, "almost")
        return {"gate": name}

    return server


@dataclass
class HttpServer:
    """One uvicorn serving `build_server` on a fixed port, which can be stopped and started again."""

    database: Path
    port: int = field(default_factory=free_port)
    #: Wraps the app in something between it and the client (a gateway, say).
    wrap: Callable[[Any], Any] = lambda app: app
    server: Server | None = None
    app: Any = None
    _uvicorn: uvicorn.Server | None = None
    _serving: asyncio.Future[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        self.server = build_server(self.database)
        self.app = create_app(self.server, HttpConfig(keepalive_interval=0.2))
        config = uvicorn.Config(
            self.wrap(self.app),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
        )
        self._uvicorn = uvicorn.Server(config)
        self._serving = asyncio.ensure_future(self._uvicorn.serve())
        async with asyncio.timeout(10):
            while not self._uvicorn.started:  # uvicorn offers readiness only as a flag
                if self._serving.done():
                    self._serving.result()  # surfaces a failure to bind
                await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._uvicorn is not None and self._serving is not None:
            self._uvicorn.should_exit = True
            await asyncio.wait_for(self._serving, 10)
            self._uvicorn = self._serving = None


@pytest.fixture
async def http_server(tmp_path: Path) -> AsyncIterator[HttpServer]:
    GATES.clear()
    served = HttpServer(tmp_path / "jobs.sqlite3")
    await served.start()
    try:
        yield served
    finally:
        for event in GATES.values():
            event.set()
        await served.stop()


@pytest.fixture
def stdio_argv(tmp_path: Path) -> list[str]:
    """A stdio server script whose jobs live in a SQLite file, so they outlive its process."""
    script = tmp_path / "server.py"
    script.write_text(STDIO_SERVER)
    return [sys.executable, str(script), str(tmp_path / "jobs.sqlite3")]


def validate(events: list[dict[str, Any]]) -> None:
    """Every event matches the published schema of its type."""
    validators = {name: jsonschema_rs.validator_for(schema) for name, schema in all_schemas().items()}
    for event in events:
        validators[event["type"]].validate(event)
