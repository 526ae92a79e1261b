"""What telemetry costs, as paired ratios within one run.

Every result is the median of per-round ratios, and the rounds change which variant goes
first, so load from a neighbour on this 2-core machine lands on both sides of a pair. No
absolute time is a result; the medians are printed only next to the ratio they come from.

1. Server CPU per `tools/call` over stdio with telemetry off: this tree against the
   commit before telemetry (a worktree of it, `--base-src`). Each run starts
   `bench/echo_server.py` with a file as stdin: initialize, notifications/initialized
   and `--calls` pipelined `tools/call echo` lines, then EOF. The result is the server's
   own user+sys CPU (`wait4`) divided by `--calls`. Start-up and shutdown are included,
   and are also reported apart, from runs with no calls. Target ≤ 1.03.
2. The same with telemetry on against off, both this tree. With telemetry on, the server
   samples every span (the default sampler, parentbased_always_on) and exports spans
   and metrics over OTLP/HTTP to a receiver in this process (`herald.testing.otlp`). The
   SDK's default batch delay and export interval apply. `run_stdio` does not read
   `OTEL_*`, so every run (each variant) starts through a small wrapper that calls
   `herald.telemetry.from_environment` first when telemetry is on. The exporter's thread
   is in the server's process, so its CPU counts. Spans the SDK drops when its queue is
   full (2048 by default) are counted. Target ≤ 1.25.
3. Job events per second with telemetry on against off, in this process: a `tools/call`
   from an in-memory client (`herald.testing.connect`) starts one `@server.job`. The job
   reports progress `--events` times as fast as it can, on a fresh SQLite file. The timer
   runs from the call until the job has ended with every event stored (events + 3:
   created, started, completed). With telemetry on, this covers the call's spans, the
   job's span with an event per progress report (the SDK keeps 128), the store-write
   histogram, the event counter and the job metrics. Everything is exported to the
   receiver once the timing is over. Target ≥ 0.8.

  git worktree add --detach /tmp/telemetry-base 8570a0d     # the commit before telemetry
  python bench/telemetry.py --base-src /tmp/telemetry-base/src [--calls 20000] [--rounds 18]
      [--events 20000] [--job-rounds 8] [--out DIR]

Without `--base-src`, the comparison with the parent commit is left out. The defaults take
about 3 minutes on 2 cores. Exit code: 0 when every target and check passes, 1 when one
fails, 2 on a setup error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop

import herald.telemetry
from herald import JobContext, Server
from herald.stores.sqlite import SqliteJobStore
from herald.testing import connect, job_ended
from herald.testing.otlp import OtlpReceiver

REPO = Path(__file__).resolve().parent.parent
ECHO = REPO / "bench" / "echo_server.py"
SERVICE = "bench-telemetry"

PARENT, OFF, ON = "parent", "off", "on"

TARGET_HEAD_VS_PARENT = 1.03  # CPU per call, at most
TARGET_ON_VS_OFF = 1.25  # CPU per call, at most
TARGET_JOB_EVENTS = 0.8  # events/s, at least

RUN_TIMEOUT_S = 180  # one server run

Row = dict[str, Any]

#: How every server run starts, whatever the variant: `python -c WRAPPER MODE SCRIPT`.
#: `on` turns telemetry on from the environment first (`run_stdio` does not), as
#: `herald run` does; `off` and `parent` import nothing more than the script does.
WRAPPER = """\
import runpy, sys
mode, script = sys.argv[1], sys.argv[2]
if mode == "on":
    import herald.telemetry
    if herald.telemetry.from_environment("bench-telemetry") is None:
        sys.exit("bench/telemetry.py: OTEL_* did not turn telemetry on")
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


# --------------------------------------------------------------------------- stdio runs


@dataclass(frozen=True)
class Variant:
    """One server under test: which herald it imports and whether telemetry is on."""

    name: str
    script: Path
    pythonpath: str | None = None  # None: this tree, as the venv installs it

    @property
    def telemetry(self) -> bool:
        return self.name == ON

    def environment(self, extra: dict[str, str]) -> dict[str, str]:
        """This process's environment without OTEL_* and PYTHONPATH, then the variant's own."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONPATH"}
        if self.pythonpath is not None:
            env["PYTHONPATH"] = self.pythonpath
        env.update(extra)
        return env


def write_batch(path: Path, calls: int) -> None:
    """initialize, notifications/initialized and `calls` echo requests (ids 1..calls), as JSON lines."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench-telemetry", "version": "0"},
        },
    }
    with path.open("w") as out:
        out.write(json.dumps(initialize) + "\n")
        out.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        for call in range(1, calls + 1):
            request = {
                "jsonrpc": "2.0",
                "id": call,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": f"hello {call}"}},
            }
            out.write(json.dumps(request) + "\n")


def answered(stdout: Path, calls: int) -> tuple[int, bool]:
    """How many of the calls 1..calls got a result that is not an error, and whether initialize did."""
    good: set[int] = set()
    initialized = False
    for line in stdout.read_bytes().splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or not isinstance(message.get("result"), dict):
            continue
        if message.get("id") == 0:
            initialized = True
        elif isinstance(message.get("id"), int) and not message["result"].get("isError"):
            good.add(message["id"])
    return len(good & set(range(1, calls + 1))), initialized


def run_server(variant: Variant, batch: Path, calls: int, rnd: int, folder: Path) -> Row:
    """Serve the batch once, to stdin EOF; the server's CPU from wait4, and what it answered.

    The wait goes through a pidfd (as in compare.py), so a timeout kill cannot hit a
    recycled pid. With telemetry on, a fresh receiver takes this run's exports: the
    server flushes before it exits, so everything it exported is here once it is reaped.
    """
    row: Row = {"variant": variant.name, "calls": calls, "round": rnd}
    stdout_path = folder / f"r{rnd}-{variant.name}-{calls}.out"
    stderr_path = folder / f"r{rnd}-{variant.name}-{calls}.err"
    with contextlib.ExitStack() as stack:
        extra: dict[str, str] = {}
        receiver: OtlpReceiver | None = None
        if variant.telemetry:
            receiver = stack.enter_context(OtlpReceiver())
            extra["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url  # and nothing else: the SDK's defaults
        argv = [sys.executable, "-c", WRAPPER, variant.name, str(variant.script)]
        with batch.open("rb") as stdin, stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            started = time.perf_counter()
            proc = subprocess.Popen(
                argv, cwd=REPO, stdin=stdin, stdout=stdout, stderr=stderr, env=variant.environment(extra)
            )
            pidfd = os.pidfd_open(proc.pid)
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                timed_out = not poller.poll(RUN_TIMEOUT_S * 1000)
                if timed_out:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                _, wait_status, usage = os.wait4(proc.pid, 0)
                wall = time.perf_counter() - started
            finally:
                os.close(pidfd)
        proc.returncode = os.waitstatus_to_exitcode(wait_status)  # reaped by wait4, tell Popen
        if receiver is not None:
            names = Counter(span.name for span in receiver.spans())
            row.update(
                spans=sum(names.values()),
                echo_spans=names.get("tools/call echo", 0),
                metrics=sorted(receiver.metric_names()),
            )
    good, initialized = answered(stdout_path, calls)
    errors = stderr_path.read_text(errors="replace")
    row.update(
        cpu_s=usage.ru_utime + usage.ru_stime,
        wall_s=round(wall, 3),
        answered=good,
        initialized=initialized,
        exit_code=proc.returncode,
        timed_out=timed_out,
        queue_full_warnings=errors.count("Queue full"),
        stderr_tail=errors[-500:] if proc.returncode or timed_out else "",
    )
    row["ok"] = good == calls and initialized and proc.returncode == 0 and not timed_out
    stdout_path.unlink()
    return row


# --------------------------------------------------------------------------- job runs


async def one_job(events: int, database: Path) -> Row:
    """One job started by a call, reporting `events` progress events; the time until it has ended."""
    server = Server("bench-telemetry-jobs", version="0")
    server.use_job_store(SqliteJobStore(database))

    @server.job
    async def count(ctx: JobContext, up_to: int) -> dict[str, int]:
        for step in range(1, up_to + 1):
            await ctx.report_progress(100 * step / up_to, "step")
        return {"counted": up_to}

    async with server.running(), connect(server) as client:
        started = time.perf_counter()
        reply = await client.call_tool("count", {"up_to": events})
        job_id = reply["structuredContent"]["jobId"]
        ended = await job_ended(server, job_id)
        elapsed = time.perf_counter() - started
        stored = await server.jobs.reader.events_after(job_id)
    return {
        "seconds": elapsed,
        "events_per_s": (events + 3) / elapsed,
        "stored_events": len(stored),
        "status": ended.status,
    }


def run_job(telemetry: bool, events: int, rnd: int, folder: Path) -> Row:
    """One job run on uvloop (as a served server runs), telemetry on or off in this process."""
    database = folder / f"jobs-r{rnd}-{'on' if telemetry else 'off'}.db"
    row: Row = {"variant": ON if telemetry else OFF, "round": rnd, "events": events}
    with contextlib.ExitStack() as outer:
        receiver = outer.enter_context(OtlpReceiver()) if telemetry else None
        with contextlib.ExitStack() as stack:
            if receiver is not None:
                os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url  # the SDK's exporters read it here
                stack.callback(os.environ.pop, "OTEL_EXPORTER_OTLP_ENDPOINT", None)
                active = herald.telemetry.from_environment(SERVICE)
                if active is None:
                    raise SystemExit(
                        "bench/telemetry.py: OTEL_EXPORTER_OTLP_ENDPOINT did not turn telemetry on"
                    )
                stack.callback(active.shutdown)  # flushes: the exports arrive before the receiver stops
                stack.callback(herald.telemetry.disable)
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                row.update(runner.run(one_job(events, database)))
        # telemetry off, flushed and stopped: everything exported is in the receiver
        if receiver is not None:
            spans = receiver.spans()
            runs = [span for span in spans if span.name == "job count"]
            row.update(
                spans=Counter(span.name for span in spans),
                job_span_events=len(runs[0].events) if runs else 0,
                metrics=sorted(receiver.metric_names()),
            )
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    row["ok"] = row["status"] == "completed" and row["stored_events"] == events + 3
    if telemetry:
        row["ok"] = row["ok"] and row["spans"].get("job count", 0) == 1 and row["job_span_events"] > 0
        row["ok"] = row["ok"] and {"herald.job.events", "herald.store.write.duration"} <= set(row["metrics"])
    return row


# --------------------------------------------------------------------------- summary


@dataclass
class Line:
    metric: str
    measured: str
    against: str
    ratio: str
    rounds: str
    target: str
    result: str  # PASS, FAIL or info


@dataclass
class Report:
    lines: list[Line] = field(default_factory=list)
    cells: dict[str, Any] = field(default_factory=dict)

    def ratio(
        self,
        label: str,
        measured: dict[int, float],
        against: dict[int, float],
        fmt: Callable[[float], str],
        *,
        target: float | None = None,
        higher_is_better: bool = False,
        expected_rounds: int = 0,
    ) -> None:
        """A line with the median of the per-round ratios measured/against (rounds with both)."""
        paired = sorted(set(measured) & set(against))
        ratios = [measured[r] / against[r] for r in paired if against[r] > 0]
        ratio = statistics.median(ratios) if ratios else None
        bound = "-" if target is None else f"{'≥' if higher_is_better else '≤'} {target:g}"
        if target is None:
            result = "info"
        elif ratio is None or len(ratios) < expected_rounds:
            result = "FAIL (missing rounds)"
        elif (ratio >= target) if higher_is_better else (ratio <= target):
            result = "PASS"
        else:
            result = "FAIL"
        text = "-"
        if ratio is not None:
            text = f"{ratio:.3f}"
            if len(ratios) > 1:
                text += f" ({min(ratios):.3f}–{max(ratios):.3f})"
        self.cells[label] = {
            "measured": measured,
            "against": against,
            "paired_ratios": ratios,
            "median_paired_ratio": ratio,
            "target": bound,
        }
        self.lines.append(
            Line(
                label,
                fmt(statistics.median(measured.values())) if measured else "-",
                fmt(statistics.median(against.values())) if against else "-",
                text,
                str(len(ratios)),
                bound,
                result,
            )
        )

    def check(self, label: str, measured: str, against: str, rounds: int, target: str, ok: bool) -> None:
        self.lines.append(Line(label, measured, against, "-", str(rounds), target, "PASS" if ok else "FAIL"))

    def render(self) -> str:
        out = [
            "| metric | measured (median) | against (median) | paired ratio, median (min–max) "
            "| rounds | target | result |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {x.metric} | {x.measured} | {x.against} | {x.ratio} | {x.rounds} | {x.target} | {x.result} |"
            for x in self.lines
        ]
        return "\n".join(out)


def fmt_us(v: float) -> str:
    return f"{v:,.1f} µs"


def fmt_ms(v: float) -> str:
    return f"{v:,.0f} ms"


def fmt_rate(v: float) -> str:
    return f"{v:,.0f}/s"


def by_round(
    rows: Sequence[Row], variant: str, calls: int, value: Callable[[Row], float]
) -> dict[int, float]:
    return {r["round"]: value(r) for r in rows if r["variant"] == variant and r["calls"] == calls and r["ok"]}


def marginal(rows: Sequence[Row], variant: str, calls: int) -> dict[int, float]:
    """CPU per call once the same round's no-call run (start-up, handshake, shutdown) is taken off."""
    full = by_round(rows, variant, calls, lambda r: r["cpu_s"])
    fixed = by_round(rows, variant, 0, lambda r: r["cpu_s"])
    return {rnd: (full[rnd] - fixed[rnd]) / calls * 1e6 for rnd in full if rnd in fixed}


def summarize(server_rows: Sequence[Row], job_rows: Sequence[Row], args: argparse.Namespace) -> Report:
    report = Report()
    calls, rounds = args.calls, args.rounds

    def per_call(variant: str) -> dict[int, float]:
        return by_round(server_rows, variant, calls, lambda r: r["cpu_s"] / calls * 1e6)

    def fixed(variant: str) -> dict[int, float]:
        return by_round(server_rows, variant, 0, lambda r: r["cpu_s"] * 1e3)

    if args.base_src is not None:
        report.ratio(
            "server CPU per tools/call (stdio, telemetry off): this tree / parent",
            per_call(OFF),
            per_call(PARENT),
            fmt_us,
            target=TARGET_HEAD_VS_PARENT,
            expected_rounds=rounds,
        )
    report.ratio(
        "server CPU per tools/call (stdio): telemetry on / off",
        per_call(ON),
        per_call(OFF),
        fmt_us,
        target=TARGET_ON_VS_OFF,
        expected_rounds=rounds,
    )
    jobs_on = {r["round"]: r["events_per_s"] for r in job_rows if r["variant"] == ON and r["ok"]}
    jobs_off = {r["round"]: r["events_per_s"] for r in job_rows if r["variant"] == OFF and r["ok"]}
    report.ratio(
        "job events/s (one job via tools/call, SQLite): telemetry on / off",
        jobs_on,
        jobs_off,
        fmt_rate,
        target=TARGET_JOB_EVENTS,
        higher_is_better=True,
        expected_rounds=args.job_rounds,
    )
    if args.base_src is not None:
        report.ratio(
            "server CPU, start + stop, no calls: this tree / parent", fixed(OFF), fixed(PARENT), fmt_ms
        )
        report.ratio(
            "server CPU per call less start + stop: this tree / parent",
            marginal(server_rows, OFF, calls),
            marginal(server_rows, PARENT, calls),
            fmt_us,
        )
    report.ratio("server CPU, start + stop, no calls: on / off", fixed(ON), fixed(OFF), fmt_ms)
    report.ratio(
        "server CPU per call less start + stop: on / off",
        marginal(server_rows, ON, calls),
        marginal(server_rows, OFF, calls),
        fmt_us,
    )

    bad = [f"{r['variant']}/{r['calls']}@r{r['round']}" for r in server_rows if not r["ok"]]
    report.check(
        "every server run: exit 0, initialize and every call answered",
        f"{len(server_rows) - len(bad)}/{len(server_rows)} runs",
        ", ".join(bad[:5]) or "-",
        rounds,
        "all",
        not bad,
    )
    on_runs = [r for r in server_rows if r["variant"] == ON and r["calls"] == calls]
    received = [r.get("echo_spans", 0) for r in on_runs]
    warned = sum(r["queue_full_warnings"] > 0 for r in on_runs)
    report.check(
        "telemetry on: tools/call spans received per run, of calls (the rest dropped by the SDK's queue)",
        f"median {statistics.median(received):,.0f} of {calls:,}" if received else "-",
        f"min {min(received):,}; 'Queue full' logged in {warned} of {len(on_runs)} runs" if received else "-",
        len(on_runs),
        "> 0 in every run",
        bool(received) and min(received) > 0,
    )
    on_jobs = [r for r in job_rows if r["variant"] == ON]
    bad_jobs = [f"{r['variant']}@r{r['round']}" for r in job_rows if not r["ok"]]
    report.check(
        "jobs: every run completed, events + 3 stored; on: its job span and store metrics received",
        f"{len(job_rows) - len(bad_jobs)}/{len(job_rows)} runs",
        "span events kept: " + ", ".join(sorted({str(r.get("job_span_events")) for r in on_jobs})),
        args.job_rounds,
        "all",
        not bad_jobs,
    )
    return report


# --------------------------------------------------------------------------- environment


def probe(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO, env=env, check=False)


def check_base(variant: Variant) -> str | None:
    """Why the parent variant would not run the parent's code, or None when it does."""
    env = variant.environment({})
    found = probe([sys.executable, "-c", "import herald; print(herald.__file__)"], env)
    if found.returncode != 0 or not found.stdout.strip().startswith(str(variant.pythonpath)):
        return f"herald under --base-src is {found.stdout.strip() or found.stderr.strip()!r}"
    if probe([sys.executable, "-c", "import herald.telemetry"], env).returncode == 0:
        return "herald.telemetry imports under --base-src: that is not the commit before telemetry"
    return None


def environment(args: argparse.Namespace) -> dict[str, str]:
    def git(*argv: str, where: Path = REPO) -> str:
        found = probe(["git", "-C", str(where), *argv])
        return found.stdout.strip() or f"? ({found.stderr.strip()[:80]})"

    changed = [line for line in git("status", "--porcelain", "--", "src").splitlines() if line.strip()]
    found = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "nproc": str(os.cpu_count()),
        "machine": f"{platform.machine()}, Linux {platform.release()}",
        "python": platform.python_version(),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "this tree": git("rev-parse", "--short", "HEAD")
        + (f" + uncommitted changes to {len(changed)} paths in src/" if changed else ""),
    }
    if args.base_src is not None:
        found["parent"] = git("rev-parse", "--short", "HEAD", where=args.base_src)
    from importlib.metadata import version

    found["opentelemetry-sdk"] = version("opentelemetry-sdk")
    return found


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-src", type=Path, help="src/ of a worktree of the commit before telemetry")
    p.add_argument("--calls", type=int, default=20_000, help="tools/call per server run (default 20000)")
    p.add_argument("--rounds", type=int, default=18, help="server rounds (default 18)")
    p.add_argument("--events", type=int, default=20_000, help="progress events per job (default 20000)")
    p.add_argument("--job-rounds", type=int, default=8, help="job rounds (default 8)")
    p.add_argument("--out", type=Path, help="write table.md and summary.json (every run) here")
    a = p.parse_args(argv)
    if a.calls < 1 or a.events < 1 or a.rounds < 1 or a.job_rounds < 1:
        p.error("--calls, --events, --rounds and --job-rounds must be at least 1")
    if a.base_src is not None:
        a.base_src = a.base_src.expanduser().resolve()
    return a


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        del os.environ[name]  # the defaults, whatever the shell says; children get only what a run sets
    if herald.telemetry.active is not None:
        print("bench/telemetry.py: telemetry is on already", file=sys.stderr)
        return 2
    variants = [Variant(OFF, ECHO), Variant(ON, ECHO)]
    if args.base_src is not None:
        base_echo = args.base_src.parent / "bench" / "echo_server.py"
        parent = Variant(PARENT, base_echo if base_echo.exists() else ECHO, str(args.base_src))
        wrong = check_base(parent)
        if wrong is not None:
            print(f"bench/telemetry.py: {wrong}", file=sys.stderr)
            return 2
        variants.insert(0, parent)
    env = environment(args)
    started = time.monotonic()
    server_rows: list[Row] = []
    job_rows: list[Row] = []
    # Every order of the variants in turn, so each runs first, middle and last as often.
    orders = itertools.cycle(list(itertools.permutations(variants)))
    with tempfile.TemporaryDirectory(prefix="bench-telemetry-") as tmp:
        folder = Path(tmp)
        batches = {calls: folder / f"batch-{calls}.jsonl" for calls in (args.calls, 0)}
        for calls, path in batches.items():
            write_batch(path, calls)
        for rnd in range(args.rounds):
            order = next(orders)
            done = [run_server(v, batches[args.calls], args.calls, rnd, folder) for v in order]
            done += [run_server(v, batches[0], 0, rnd, folder) for v in order]
            server_rows += done
            print(
                f"round {rnd + 1}/{args.rounds}: "
                + ", ".join(
                    f"{r['variant']} {r['cpu_s'] * 1e3:,.0f} ms"
                    + ("" if r["ok"] else " NOT OK")
                    + (f" ({r['echo_spans']:,} spans)" if "echo_spans" in r and r["calls"] else "")
                    for r in done
                    if r["calls"]
                )
                + " CPU; no calls: "
                + ", ".join(f"{r['variant']} {r['cpu_s'] * 1e3:,.0f} ms" for r in done if not r["calls"]),
                flush=True,
            )
        for rnd in range(args.job_rounds):
            turns = (False, True) if rnd % 2 == 0 else (True, False)
            done = [run_job(on, args.events, rnd, folder) for on in turns]
            job_rows += done
            print(
                f"job round {rnd + 1}/{args.job_rounds}: "
                + ", ".join(
                    f"{r['variant']} {r['events_per_s']:,.0f} events/s" + ("" if r["ok"] else " NOT OK")
                    for r in done
                ),
                flush=True,
            )
    elapsed = time.monotonic() - started
    env["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())

    report = summarize(server_rows, job_rows, args)
    checked = [x for x in report.lines if x.result != "info"]
    failed = [x.metric for x in checked if x.result != "PASS"]
    heading = (
        f"telemetry's cost: {env['this tree']}"
        + (f" against parent {env['parent']}" if "parent" in env else "")
        + f", {args.rounds} server rounds of {args.calls:,} calls, {args.job_rounds} job rounds of "
        f"{args.events:,} events, {env['date']}, {env['nproc']} cores, {elapsed:.0f} s"
    )
    verdict = (
        f"all {len(checked)} targets and checks pass"
        if not failed
        else f"{len(failed)} of {len(checked)} targets and checks fail: " + "; ".join(failed)
    )
    text = f"{heading}\n\n{report.render()}\n\n{verdict}\n"
    print(f"\n{text}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.md").write_text(text)
        summary = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "environment": env,
            "elapsed_s": round(elapsed, 1),
            "cells": report.cells,
            "lines": [vars(x) for x in report.lines],
            "failed": failed,
            "server_runs": server_rows,
            "job_runs": job_rows,
        }
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
        print(f"written to {args.out}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
