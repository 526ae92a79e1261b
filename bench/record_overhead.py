"""What recording costs: the same server direct, through a plain proxy, through `herald record`,
and recording itself with `--message-log`, side by side in one run.

    python bench/record_overhead.py [--rounds 3] [--shared ../shared/bench] [--calls 2000]

For stdio and for Streamable HTTP, each round runs the shared load generator (`mcpload.py`)
against four set-ups of `bench/echo_server.py`, in a rotating order:

- direct: the client talks to the server;
- pass-through: the same proxy as `herald record`, recording nothing (the proxy's own cost);
- recorded: `herald record`, writing every message to a log file;
- own log: the server itself writing the log (`--message-log`), no proxy at all.

It reports the median p50 latency of sequential calls and the median throughput with 16
calls in flight, and the per-round paired ratios: recorded / pass-through is what
recording adds through the proxy (the target: at most 1.10), recorded / direct what the
whole proxy costs, and own log / direct what a herald server pays to record itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ECHO = [sys.executable, str(REPO / "bench" / "echo_server.py")]
HERALD = [sys.executable, "-c", "from herald.cli.main import main; main()"]
SELF = [sys.executable, str(Path(__file__).resolve())]
SETUPS = ("direct", "pass-through", "recorded", "own log")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_listening(port: int, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


@contextlib.contextmanager
def running(argv: list[str], port: int) -> Iterator[None]:
    process = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def mcpload(shared: Path, target: list[str], calls: int) -> dict[str, float]:
    argv = [sys.executable, str(shared / "mcpload.py"), *target, "--scenarios", "seq,conc"]
    argv += ["-n", str(calls), "--total", str(calls), "-c", "16", "--no-table", "--max-total", "240"]
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=True)
    rows = {row["scenario"]: row for row in map(json.loads, out.stdout.splitlines())}
    if not all(row["ok"] for row in rows.values()):
        raise SystemExit(f"mcpload reported errors: {rows}")
    return {"p50_us": rows["seq"]["p50_us"], "conc_rps": rows["conc"]["rps"]}


def stdio_round(shared: Path, calls: int, logs: Path, order: list[str]) -> dict[str, dict[str, float]]:
    commands = {
        "direct": ECHO,
        "pass-through": [*SELF, "--pass-through", "--", *ECHO],
        "recorded": [*HERALD, "record", "-o", str(logs / "stdio-proxy.jsonl"), "--", *ECHO],
        "own log": [*ECHO, "--message-log", str(logs / "stdio-own.jsonl")],
    }
    return {setup: mcpload(shared, ["--stdio", shlex.join(commands[setup])], calls) for setup in order}


def http_round(shared: Path, calls: int, logs: Path, order: list[str]) -> dict[str, dict[str, float]]:
    measured: dict[str, dict[str, float]] = {}
    server = free_port()
    upstream = f"http://127.0.0.1:{server}/mcp"
    with running([*ECHO, "--transport", "http", "--port", str(server)], server):
        for setup in order:
            if setup == "direct":
                measured[setup] = mcpload(shared, ["--url", upstream], calls)
                continue
            port = free_port()
            if setup == "pass-through":
                argv = [*SELF, "--pass-through-http", upstream, "--port", str(port)]
            elif setup == "recorded":
                log = str(logs / "http-proxy.jsonl")
                argv = [*HERALD, "record", "-o", log, "--upstream", upstream, "--port", str(port)]
            else:
                argv = [*ECHO, "--transport", "http", "--port", str(port)]
                argv += ["--message-log", str(logs / "http-own.jsonl")]
            with running(argv, port):
                measured[setup] = mcpload(shared, ["--url", f"http://127.0.0.1:{port}/mcp"], calls)
    return measured


def report(transport: str, rounds: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    def median(setup: str, metric: str) -> float:
        return statistics.median(round_[setup][metric] for round_ in rounds)

    def ratio(top: str, bottom: str, metric: str) -> float:
        return statistics.median(round_[top][metric] / round_[bottom][metric] for round_ in rounds)

    print(f"\n{transport}: median over {len(rounds)} rounds")
    print("| set-up | p50 sequential (µs) | 16 in flight (calls/s) |")
    print("|---|---:|---:|")
    for setup in SETUPS:
        print(f"| {setup} | {median(setup, 'p50_us'):.0f} | {median(setup, 'conc_rps'):.0f} |")
    ratios = {
        "recorded / pass-through, p50": ratio("recorded", "pass-through", "p50_us"),
        "recorded / direct, p50": ratio("recorded", "direct", "p50_us"),
        "own log / direct, p50": ratio("own log", "direct", "p50_us"),
        "recorded / pass-through, calls/s": ratio("recorded", "pass-through", "conc_rps"),
        "own log / direct, calls/s": ratio("own log", "direct", "conc_rps"),
    }
    for name, value in ratios.items():
        print(f"  {name}: {value:.3f}")
    return {
        "medians": {s: {m: median(s, m) for m in ("p50_us", "conc_rps")} for s in SETUPS},
        "ratios": ratios,
    }


def pass_through(argv: list[str]) -> None:
    """The stdio proxy of `herald record`, recording nothing."""
    from herald.record.stdio import record_stdio
    from herald.transports.stdio import run_event_loop

    codes: list[int] = []

    async def run() -> None:
        codes.append(await record_stdio(argv, None))

    run_event_loop(run())
    raise SystemExit(codes[0] if codes else 1)


def pass_through_http(upstream: str, port: int) -> None:
    """The HTTP proxy of `herald record`, recording nothing."""
    import uvicorn

    from herald.record.http import Upstream, origin_of

    config = uvicorn.Config(
        Upstream(origin_of(upstream)),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        date_header=False,
    )
    uvicorn.Server(config).run()


def main() -> None:
    if "--pass-through" in sys.argv:
        pass_through(sys.argv[sys.argv.index("--") + 1 :])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "bench")
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    parser.add_argument("--pass-through-http", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.pass_through_http:
        pass_through_http(options.pass_through_http, options.port)
        return
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch)
        for transport in ("stdio", "http") if options.transport == "both" else (options.transport,):
            rounds = []
            for number in range(options.rounds):
                order = list(SETUPS[number % 4 :] + SETUPS[: number % 4])
                run = stdio_round if transport == "stdio" else http_round
                rounds.append(run(options.shared, options.calls, logs, order))
                print(f"{transport} round {number + 1}: {json.dumps(rounds[-1])}", flush=True)
            results[transport] = report(transport, rounds)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
