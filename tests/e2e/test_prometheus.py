"""A real Prometheus scrapes `giftgenius serve --metrics` and reads herald's job counters back.

`giftgenius serve --metrics` runs in its own process on a SQLite store, and Debian's
`prometheus` scrapes its `/metrics` every second, with a configuration of its own and its
storage in the test's directory. A bulk gift analysis runs to completion over MCP; then
Prometheus's HTTP query API answers with the target `up`, one job started and one job ended
completed (`herald_jobs_started_total`, `herald_jobs_ended_total`), and one call of the tool
timed (`mcp_server_operation_duration_seconds_count`): the names, labels and values that
herald's OpenTelemetry metrics take on the way through Prometheus's text format.

Under `CI=true` a missing `prometheus` is a failure; elsewhere the test is skipped, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from herald.client import connect_http
from herald.testing import free_port
from tests.servers import GIFTGENIUS, started

pytestmark = pytest.mark.slow  # a server and Prometheus, in real processes

#: Two people with interests and budgets: a job of a moment.
PEOPLE_CSV = "name,department,interests,budget\nAda,Eng,board games;coffee,60\nCy,Ops,hiking,40\n"
TOOL = "start_bulk_gift_analysis"
#: What Prometheus calls the scrape job, and so the `job` label of every series it scrapes.
SCRAPE_JOB = "giftgenius"
#: Prometheus scrapes a new target only once its discovery settles (about 5 s), then every second.
DEADLINE_SECONDS = 60.0
POLL_SECONDS = 0.2


def prometheus_config(target_port: int) -> str:
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: {SCRAPE_JOB}
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:{target_port}"]
"""


def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("prometheus is not installed (make test installs it: make service-deps)")
        pytest.skip("prometheus is not installed; run make service-deps")
    return binary


@contextlib.contextmanager
def prometheus(binary: str, tmp_path: Path, target_port: int) -> Iterator[str]:
    """Prometheus scraping 127.0.0.1:`target_port` until the block ends; yields its URL."""
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(prometheus_config(target_port))
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'prometheus-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with started(argv, tmp_path / "prometheus.log", port, measured=False):
        yield f"http://127.0.0.1:{port}"


async def run_job_to_its_end(url: str) -> str:
    """Start a bulk analysis over MCP and poll it until it ends; returns how it ended."""
    async with asyncio.timeout(DEADLINE_SECONDS), connect_http(url, False) as client:
        started_job = await client.call_tool(TOOL, {"csv": PEOPLE_CSV})
        job_id = started_job["structuredContent"]["jobId"]
        while True:
            result = await client.call_tool("get_job_status", {"jobId": job_id})
            status = result["structuredContent"]
            if status["pollAfterMs"] is None:  # ended: nothing more to poll for
                return str(status["status"])
            await asyncio.sleep(min(status["pollAfterMs"] / 1000, POLL_SECONDS))


async def query(http: httpx.AsyncClient, prometheus_url: str, promql: str) -> list[dict[str, Any]]:
    """The series of an instant query, as Prometheus's HTTP API gives them."""
    response = await http.get(f"{prometheus_url}/api/v1/query", params={"query": promql})
    response.raise_for_status()
    answer = response.json()
    assert answer["status"] == "success", answer
    assert answer["data"]["resultType"] == "vector", answer
    series: list[dict[str, Any]] = answer["data"]["result"]
    return series


async def counted_once(http: httpx.AsyncClient, prometheus_url: str, promql: str) -> list[dict[str, Any]]:
    """The series of `promql` once Prometheus has scraped one of value 1 (polled, within the
    deadline): the counters start at 0 with the server, before the job."""
    try:
        async with asyncio.timeout(DEADLINE_SECONDS):
            while True:
                series = await query(http, prometheus_url, promql)
                if values(series) == [1.0]:
                    return series
                await asyncio.sleep(POLL_SECONDS)  # the next scrape is at most a second away
    except TimeoutError:
        targets = (await http.get(f"{prometheus_url}/api/v1/targets")).json()["data"]["activeTargets"]
        scrapes = [(target["scrapeUrl"], target["health"], target["lastError"]) for target in targets]
        raise AssertionError(f"no {promql} in {DEADLINE_SECONDS} s; the scrapes: {scrapes}") from None


def values(series: list[dict[str, Any]]) -> list[float]:
    return [float(sample["value"][1]) for sample in series]


async def scraped(prometheus_url: str, instance: str) -> None:
    """What Prometheus holds of the server after the job: asserted series by series."""
    target = f'job="{SCRAPE_JOB}",instance="{instance}"'
    tool = f'gen_ai_tool_name="{TOOL}"'
    async with httpx.AsyncClient(timeout=10) as http:
        ended = await counted_once(
            http, prometheus_url, f'herald_jobs_ended_total{{{target},{tool},herald_job_outcome="completed"}}'
        )
        assert values(ended) == [1.0], ended
        assert ended[0]["metric"]["otel_scope_name"] == "herald", ended
        # All of the below was counted before the job ended: the scrape that has it has them.
        ended_by_outcome = await query(http, prometheus_url, f"herald_jobs_ended_total{{{target},{tool}}}")
        outcomes = {
            series["metric"]["herald_job_outcome"]: float(series["value"][1]) for series in ended_by_outcome
        }
        assert outcomes == {"completed": 1.0, "failed": 0.0, "cancelled": 0.0}, "each outcome counted from 0"
        started_jobs = await query(http, prometheus_url, f"herald_jobs_started_total{{{target},{tool}}}")
        assert values(started_jobs) == [1.0], started_jobs
        assert started_jobs[0]["metric"]["herald_job_resumed"] == "false", started_jobs
        calls = await query(
            http,
            prometheus_url,
            f'mcp_server_operation_duration_seconds_count{{{target},{tool},mcp_method_name="tools/call"}}',
        )
        assert values(calls) == [1.0], calls
        up = await query(http, prometheus_url, f"up{{{target}}}")
        assert values(up) == [1.0], up


def test_prometheus_scrapes_the_job_counters_of_a_live_server(tmp_path: Path) -> None:
    binary = prometheus_binary()
    port = free_port()
    argv = [*GIFTGENIUS, "serve", "--port", str(port), "--store", str(tmp_path / "store.db"), "--metrics"]
    with (
        started(argv, tmp_path / "giftgenius.log", port) as server,
        prometheus(binary, tmp_path, port) as prometheus_url,
    ):
        outcome = asyncio.run(run_job_to_its_end(f"http://127.0.0.1:{port}/mcp"))
        assert outcome == "completed"
        # Still running: a server that found its port taken would have exited at once, leaving
        # the test talking to whatever held the port.
        assert server.process.poll() is None, server.stderr.read_text()
        asyncio.run(scraped(prometheus_url, f"127.0.0.1:{port}"))
        assert server.process.poll() is None, "the server served metrics to the end"
