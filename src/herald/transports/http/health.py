"""`GET /healthz` and `GET /readyz`: what a load balancer or an orchestrator asks a replica.

`/healthz` says the process is up and answering (200 while it serves at all): a probe
that restarts a process on failure asks it. `/readyz` says whether the replica should be
sent requests: 503 while the server has not finished starting (its lifespan has not run),
while it drains after SIGTERM (`Server.draining`, set by `run_http` as uvicorn begins
to stop), or when its job store does not answer within `STORE_PROBE_SECONDS`. Both
answer small JSON, never cached, and need no token: they say nothing about the data.
"""

from __future__ import annotations

import asyncio
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from herald.server.app import Server
from herald.stores.errors import StoreError

__all__ = ["health_routes"]

#: How long `/readyz` waits for the job store before it calls the replica not ready.
STORE_PROBE_SECONDS: Final = 2.0
#: A job id no job has: reading it asks the store a question without touching any job.
PROBE_JOB_ID: Final = "readyz-probe"
NO_STORE: Final = {"cache-control": "no-store"}


def health_routes(server: Server) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"}, headers=NO_STORE)

    async def readyz(request: Request) -> JSONResponse:
        problem = await _not_ready(server)
        if problem is not None:
            return JSONResponse({"status": "not ready", "reason": problem}, status_code=503, headers=NO_STORE)
        return JSONResponse({"status": "ready"}, headers=NO_STORE)

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


async def _not_ready(server: Server) -> str | None:
    """Why the replica should get no requests now, or None when it should."""
    if server.draining:
        return "draining: the server is shutting down"
    if not server.lifespan_running:
        return "starting: the server's lifespan has not run"
    if server.jobs.in_use:
        try:
            async with asyncio.timeout(STORE_PROBE_SECONDS):
                await server.jobs.reader.get(PROBE_JOB_ID)
        except (StoreError, TimeoutError) as exc:
            return f"the job store does not answer ({exc or 'timed out'})"
    return None
