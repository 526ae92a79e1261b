"""Throughput of one replica against two behind a balancer, and what each replica costs.

Every replica is `bench/echo_server.py --store redis://…` (sessions and event streams in a
private `redis-server` started here); the balancer is haproxy, alternating requests
between the replicas (`balance roundrobin`), so one session's requests land on both and
each serves the other's sessions from the store. `mcpload.py` (the shared load
generator) runs the same scenarios against:

- `direct`: one replica, no balancer (the floor of what a replica does);
- `one`: one replica behind haproxy (what the balancer itself costs);
- `two`: two replicas behind haproxy.

Rounds interleave the three. Reported per configuration: calls/s of 16 POSTs in flight on
one session (`conc`) and of 16 sessions (`sessions`), the ratio two/one, and per replica
its resident memory after the run and the Redis connections it holds. On this 2-core
machine the load generator, haproxy, Redis and the replicas share the cores: this is a
report, not a target.

  python bench/replicas.py [--rounds 2] [--out bench/results/replicas.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

from herald.testing import free_port, redis_server, wait_until_listening

REPO = Path(__file__).resolve().parent.parent
MCPLOAD = REPO.parent / "shared" / "bench" / "mcpload.py"
SCENARIOS = "conc,sessions"
#: Bound on one mcpload run (it bounds each scenario itself too).
RUN_SECONDS = 120


@contextlib.contextmanager
def replica(store: str, log: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [sys.executable, str(REPO / "bench" / "echo_server.py"), "--transport", "http"]
    with log.open("wb") as errors:
        process = subprocess.Popen([*command, "--port", str(port), "--store", store], stderr=errors)
    try:
        wait_until_listening(port)
        yield port, process
    finally:
        process.terminate()
        process.wait(timeout=15)


@contextlib.contextmanager
def balancer(folder: Path, ports: list[int]) -> Iterator[int]:
    port = free_port()
    servers = "\n".join(f"    server r{n} 127.0.0.1:{backend}" for n, backend in enumerate(ports, 1))
    config = folder / f"haproxy-{len(ports)}.cfg"
    config.write_text(
        f"""
defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
{servers}
"""
    )
    process = subprocess.Popen(["haproxy", "-f", str(config)], stderr=subprocess.DEVNULL)
    try:
        wait_until_listening(port)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=15)


def load(port: int, name: str, out: Path) -> list[dict[str, Any]]:
    jsonl = out / f"{name}-{time.monotonic_ns()}.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(MCPLOAD),
            "--url",
            f"http://127.0.0.1:{port}/mcp",
            "--name",
            name,
            "--scenarios",
            SCENARIOS,
            "-c",
            "16",
            "--jsonl",
            str(jsonl),
            "--no-table",
        ],
        check=False,
        stdout=subprocess.DEVNULL,
        timeout=RUN_SECONDS,
    )
    return [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def one_round(url: str, folder: Path, results: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """Each configuration once; returns what the two replicas cost."""
    counter = redis.Redis.from_url(url)
    with replica(url, folder / "direct.log") as (port, _):
        record(results, "direct", load(port, "direct", folder))
    with replica(url, folder / "one.log") as (port, _), balancer(folder, [port]) as front:
        record(results, "one", load(front, "one", folder))
    before = int(counter.info("clients")["connected_clients"])
    with (
        replica(url, folder / "two-a.log") as (first, a),
        replica(url, folder / "two-b.log") as (second, b),
        balancer(folder, [first, second]) as front,
    ):
        record(results, "two", load(front, "two", folder))
        held = int(counter.info("clients")["connected_clients"]) - before
        cost = {
            "resident_mib_each": [round(resident_mib(p.pid), 1) for p in (a, b)],
            "redis_connections": held,
        }
    counter.close()
    return cost


def record(results: dict[str, dict[str, list[float]]], name: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        if row.get("ok") and isinstance(row.get("rps"), int | float):
            results.setdefault(name, {}).setdefault(row["scenario"], []).append(float(row["rps"]))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the report here as JSON too")
    args = parser.parse_args()
    if shutil.which("haproxy") is None or not MCPLOAD.exists():
        print("replicas: needs haproxy (make service-deps) and ../shared/bench/mcpload.py", file=sys.stderr)
        return 2
    results: dict[str, dict[str, list[float]]] = {}
    costs = []
    with tempfile.TemporaryDirectory() as folder, redis_server() as url:
        for _ in range(args.rounds):
            costs.append(one_round(url, Path(folder), results))
    report: dict[str, Any] = {
        name: {scenario: round(statistics.median(values)) for scenario, values in scenarios.items()}
        for name, scenarios in results.items()
    }
    report["two_over_one"] = {
        scenario: round(report["two"][scenario] / report["one"][scenario], 2)
        for scenario in report.get("one", {})
        if scenario in report.get("two", {})
    }
    report["cost_per_replica"] = costs[-1]
    print(json.dumps(report, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
