"""`/healthz` and `/readyz`, as a load balancer and an orchestrator's probes ask them."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx
import pytest
import redis

from herald import JobContext, Server
from herald.stores.redis import RedisJobStore
from herald.testing import redis_server
from herald.testing.http import serve_http
from herald.transports.http import create_app


def build() -> Server:
    server = Server("probed")

    @server.job
    async def noop(ctx: JobContext) -> dict[str, Any]:
        return {}

    return server


def base_of(url: str) -> str:
    return url.removesuffix("/mcp")


async def test_a_serving_replica_is_up_and_ready() -> None:
    server = build()
    async with serve_http(server) as (url, _), httpx.AsyncClient() as http:
        health = await http.get(base_of(url) + "/healthz")
        ready = await http.get(base_of(url) + "/readyz")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert ready.headers["cache-control"] == "no-store"
        server.draining = True  # what SIGTERM sets under `run_http`
        draining = await http.get(base_of(url) + "/readyz")
        assert draining.status_code == 503
        assert draining.json()["reason"] == "draining: the server is shutting down"
        assert (await http.get(base_of(url) + "/healthz")).status_code == 200, "up while it drains"


async def test_an_app_whose_lifespan_never_ran_is_not_ready() -> None:
    app = create_app(build())
    transport = httpx.ASGITransport(app=app)  # runs no lifespan, as a mount that was not told
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        ready = await http.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["reason"].startswith("starting")


@pytest.mark.slow  # a private redis-server, stopped under the replica
async def test_a_store_that_does_not_answer_makes_the_replica_not_ready() -> None:
    server = build()
    with redis_server() as url:
        server.use_job_store(RedisJobStore.from_url(url))
        async with serve_http(server) as (mcp_url, _), httpx.AsyncClient(timeout=30) as http:
            assert (await http.get(base_of(mcp_url) + "/readyz")).status_code == 200
            stopped = await _stop_redis_and_probe(http, base_of(mcp_url), url)
    assert stopped.status_code == 503
    assert stopped.json()["reason"].startswith("the job store does not answer")


async def _stop_redis_and_probe(http: httpx.AsyncClient, base: str, url: str) -> httpx.Response:
    client = redis.Redis.from_url(url)
    with contextlib.suppress(redis.ConnectionError):  # it went away while answering: down, as asked
        client.shutdown(nosave=True)
    return await http.get(base + "/readyz")
