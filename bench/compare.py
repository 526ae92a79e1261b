"""Compare herald with the official MCP Python SDK's high-level server, side by side.

Each round runs both servers under the shared load generator (`mcpload.py`), interleaved,
alternating which goes first, then times each whole process serving a piped batch
(initialize + initialized + echo) to stdin EOF. Over stdio the round also runs the
hand-written floor `ref_stdio.py` (a blocking stdlib loop, not a framework) through the
notify scenario, so notifications are set against the fastest a Python server can be as
well as against the SDK. For every metric it reports the median over rounds and the median
of the per-round paired ratios herald / baseline (sdk_high unless the row names ref_stdio),
checks the targets, prints a markdown table and writes it, with the raw rows, to --out.

Exit code: 0 when every target passes, 1 when one fails (or the run was cut short by its
time bound), 2 on a usage or setup error. Stdlib only:

  python3 bench/compare.py [--rounds 3] [--shared ../shared/bench] [--out bench/results/NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import shlex
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HERALD = "herald"
BASE = "sdk_high"  # the paired ratios' denominator
FLOOR = "ref_stdio"  # the hand-written floor, for the rows that name it

Row = dict[str, Any]

SCENARIOS = {
    "stdio": "handshake,seq,conc,notify,rss,eof",
    "http": "handshake,seq,conc,sessions,notify,rss",
}

#: The floor serves only what its rows need: it is a reference, not a contender.
FLOOR_SCENARIOS = "notify"

MCPLOAD_MAX_TOTAL_S = 240  # mcpload's own watchdog, per invocation
MCPLOAD_TIMEOUT_S = 300  # our bound on one mcpload invocation
BATCH_TIMEOUT_S = 30  # our bound on one whole-process batch run
PROBE_TIMEOUT_S = 30  # version probes


# --------------------------------------------------------------------------- entries


@dataclass(frozen=True)
class Entry:
    """One server under test: the command that starts it, in stdio mode."""

    name: str
    argv: tuple[str, ...]
    scenarios: str | None = None  # None: every scenario of the transport

    def server_argv(self, transport: str, port: int) -> list[str]:
        if transport == "stdio":
            return list(self.argv)
        return [*self.argv, "--transport", "http", "--port", str(port)]

    def mcpload_target(self, transport: str, port: int) -> list[str]:
        """mcpload's arguments that name and (for stdio) spawn this server."""
        cmd = shlex.join(self.server_argv(transport, port))
        if transport == "stdio":
            return ["--stdio", cmd]
        return ["--url", f"http://127.0.0.1:{port}/mcp", "--spawn", cmd]


def build_entries(shared: Path, anchors: Path, transport: str) -> list[Entry]:
    entries = [
        Entry(HERALD, (str(REPO / ".venv" / "bin" / "python"), str(REPO / "bench" / "echo_server.py"))),
        Entry(BASE, (str(anchors / "venv-mcp" / "bin" / "python"), str(shared / "fixtures" / "sdk_high.py"))),
    ]
    if transport == "stdio":  # stdlib only: it runs on the load generator's own Python
        floor = (sys.executable, str(shared / "fixtures" / "ref_stdio.py"))
        entries.append(Entry(FLOOR, floor, FLOOR_SCENARIOS))
    return entries


# --------------------------------------------------------------------------- time bound


@dataclass
class Budget:
    """A deadline for the whole run; every subprocess timeout is clipped to it."""

    deadline: float
    cut_short: list[str] = field(default_factory=list)

    def timeout(self, cap: float) -> float:
        return max(0.0, min(cap, self.deadline - time.monotonic()))

    def allows(self, what: str, need: float = 5.0) -> bool:
        if self.deadline - time.monotonic() >= need:
            return True
        self.cut_short.append(what)
        return False


# --------------------------------------------------------------------------- runners


def run_mcpload(
    entry: Entry,
    transport: str,
    port: int,
    rnd: int,
    args: argparse.Namespace,
    out: Path,
    budget: Budget,
) -> list[Row]:
    """Run mcpload once against one server; return its rows tagged with the round."""
    jsonl = out / "rounds" / f"r{rnd}-{entry.name}-{transport}.jsonl"
    jsonl.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(args.shared / "mcpload.py"),
        *entry.mcpload_target(transport, port),
        "--name",
        entry.name,
        "--scenarios",
        entry.scenarios or SCENARIOS[transport],
        "--jsonl",
        str(jsonl),
        "--server-stderr",
        str(out / "stderr" / f"{entry.name}-{transport}.log"),
        "--no-table",
        "--max-total",
        str(MCPLOAD_MAX_TOTAL_S),
    ]
    if transport == "stdio" and "eof" in (entry.scenarios or SCENARIOS[transport]):
        cmd += ["--eof-reps", str(args.eof_reps)]
    t0 = time.monotonic()
    status: str
    try:
        proc = subprocess.run(
            cmd,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=budget.timeout(MCPLOAD_TIMEOUT_S),
        )
        status = f"rc={proc.returncode}"
        if proc.stderr.strip():
            with (out / "stderr" / "mcpload.log").open("a") as fh:
                fh.write(f"--- round {rnd} {entry.name} {transport}\n{proc.stderr}")
    except subprocess.TimeoutExpired:
        status = "timeout"
    rows: list[Row] = []
    if jsonl.exists():
        for line in jsonl.read_text().splitlines():
            if line.strip():
                row: Row = json.loads(line)
                row["round"] = rnd
                rows.append(row)
    print(
        f"round {rnd + 1}/{args.rounds} {entry.name:<9} {transport:<5} mcpload {status} "
        f"{time.monotonic() - t0:5.1f}s, {len(rows)} rows",
        flush=True,
    )
    return rows


def run_batch(entry: Entry, batch: Path, rnd: int, rep: int, out: Path, budget: Budget) -> Row:
    """Start the server with the batch file as stdin and wait for it to exit at EOF.

    Wall time runs from just before the spawn to the reap; peak RSS is the child's own
    ru_maxrss from wait4 (Linux carries the parent's RSS across the fork and exec, so this
    has a floor: the RSS of this process, recorded in the environment). The wait goes
    through a pidfd, so a timeout kill can never hit a recycled pid.
    """
    row: Row = {"impl": entry.name, "transport": "stdio", "scenario": "batch", "round": rnd, "rep": rep}
    stdout_path = out / "rounds" / f"r{rnd}-{entry.name}-batch{rep}.out"
    limit = budget.timeout(BATCH_TIMEOUT_S)
    with (
        batch.open("rb") as stdin,
        stdout_path.open("wb") as stdout,
        (out / "stderr" / f"{entry.name}-batch.log").open("ab") as stderr,
    ):
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(entry.argv), cwd=REPO, stdin=stdin, stdout=stdout, stderr=stderr)
        pidfd = os.pidfd_open(proc.pid)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            timed_out = not poller.poll(limit * 1000)
            if timed_out:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            _, wait_status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
        finally:
            os.close(pidfd)
    proc.returncode = os.waitstatus_to_exitcode(wait_status)  # reaped by wait4, tell Popen
    answered = False
    for line in stdout_path.read_bytes().splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("id") == 3 and "result" in msg:
            answered = True
    row.update(
        wall_ms=round(wall * 1000, 1),
        peak_rss_kb=usage.ru_maxrss,
        cpu_ms=round((usage.ru_utime + usage.ru_stime) * 1000, 1),
        answered=answered,
        exit_code=proc.returncode,
        timed_out=timed_out,
        ok=answered and not timed_out and proc.returncode == 0,
    )
    return row


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class Metric:
    scenario: str
    key: str
    label: str
    fmt: Callable[[float], str]
    higher_is_better: bool
    target: float | None = None  # bound on the paired ratio; None: informational
    base: str = BASE  # the implementation in the ratio's denominator

    def target_text(self) -> str:
        if self.target is None:
            return "-"
        return f"{'≥' if self.higher_is_better else '≤'} {self.target:g}"


def fmt_ms(v: float) -> str:
    return f"{v:,.1f} ms"


def fmt_us(v: float) -> str:
    return f"{v:,.0f} µs"


def fmt_rate(v: float) -> str:
    return f"{v:,.0f}/s"


def fmt_mib(v: float) -> str:
    return f"{v / 1024:,.1f} MiB"


METRICS: dict[str, list[Metric]] = {
    "stdio": [
        Metric("conc", "rps", "pipelined echo (c=16) calls/s", fmt_rate, True, 20.0),
        Metric("seq", "p50_us", "sequential echo p50", fmt_us, False, 0.25),
        Metric("notify", "notif_per_s", "progress notifications/s", fmt_rate, True, 12.0),
        Metric(
            "notify", "notif_per_s", f"progress notifications/s, against {FLOOR}", fmt_rate, True, 0.5, FLOOR
        ),
        Metric("handshake", "median_ms", "spawn → initialized", fmt_ms, False, 0.6),
        Metric("rss", "rss_kb", "RSS after the run", fmt_mib, False, 0.75),
        Metric("seq", "p99_us", "sequential echo p99", fmt_us, False),
        Metric("seq", "server_cpu_us_per_call", "server CPU per sequential call", fmt_us, False),
        Metric("conc", "p99_us", "pipelined echo p99", fmt_us, False),
        Metric("conc", "server_cpu_us_per_call", "server CPU per pipelined call", fmt_us, False),
        Metric("handshake", "eof_to_exit_median_ms", "stdin EOF → exit", fmt_ms, False),
        Metric("batch", "wall_ms", "whole process: start, batch, exit (wall)", fmt_ms, False),
        Metric("batch", "peak_rss_kb", "whole process: peak RSS", fmt_mib, False),
    ],
    # The HTTP targets of the Streamable HTTP issue: load on one session and on 16, tail
    # latency under that load, and notifications.
    "http": [
        Metric("conc", "rps", "1 session, 16 POSTs in flight: calls/s", fmt_rate, True, 9.0),
        Metric("sessions", "rps", "16 sessions: calls/s", fmt_rate, True, 3.0),
        Metric("conc", "p99_us", "p99 latency, 16 in flight", fmt_us, False, 0.1),
        Metric("notify", "notif_per_s", "progress notifications/s", fmt_rate, True, 4.0),
        Metric("seq", "p50_us", "sequential echo p50", fmt_us, False),
        Metric("seq", "p99_us", "sequential echo p99", fmt_us, False),
        Metric("seq", "server_cpu_us_per_call", "server CPU per sequential call", fmt_us, False),
        Metric("conc", "server_cpu_us_per_call", "server CPU per call, 16 in flight", fmt_us, False),
        Metric("handshake", "median_ms", "initialize round trip", fmt_ms, False),
        Metric("handshake", "spawn_to_first_initialized_ms", "spawn → first initialized", fmt_ms, False),
        Metric("rss", "rss_kb", "RSS after the run", fmt_mib, False),
    ],
}


@dataclass
class Line:
    metric: str
    herald: str
    base: str
    ratio: str
    target: str
    result: str  # PASS, FAIL or info


def per_round(rows: Sequence[Row], impl: str, scenario: str, key: str) -> dict[int, float]:
    """One value per round; several rows in a round (batch reps) give their median."""
    vals: dict[int, list[float]] = {}
    for r in rows:
        v = r.get(key)
        if r["impl"] == impl and r["scenario"] == scenario and isinstance(v, int | float):
            vals.setdefault(int(r["round"]), []).append(float(v))
    return {k: statistics.median(v) for k, v in vals.items()}


def metric_line(rows: Sequence[Row], m: Metric, rounds: int, cells: dict[str, Any]) -> Line:
    h = per_round(rows, HERALD, m.scenario, m.key)
    b = per_round(rows, m.base, m.scenario, m.key)
    ratios = [h[k] / b[k] for k in sorted(h) if b.get(k)]
    ratio = statistics.median(ratios) if ratios else None
    cells[f"{m.scenario}.{m.key}" + ("" if m.base == BASE else f".{m.base}")] = {
        "herald": h,
        m.base: b,
        "paired_ratios": ratios,
        "median_paired_ratio": ratio,
        "target": m.target_text(),
    }
    if m.target is None:
        result = "info"
    elif ratio is None or len(ratios) < rounds:
        result = "FAIL (missing rounds)"
    elif (ratio >= m.target) if m.higher_is_better else (ratio <= m.target):
        result = "PASS"
    else:
        result = "FAIL"
    ratio_txt = "-"
    if ratio is not None:
        ratio_txt = f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.3f}"
        if len(ratios) > 1:
            ratio_txt += f" ({min(ratios):.2f}–{max(ratios):.2f})"
    return Line(
        m.label,
        m.fmt(statistics.median(h.values())) if h else "-",
        m.fmt(statistics.median(b.values())) if b else "-",
        ratio_txt,
        m.target_text(),
        result,
    )


def count(rows: Sequence[Row], impl: str, scenario: str, key: str) -> tuple[int, int]:
    """Sum of `key` over an implementation's rows of a scenario, and how many rounds had one."""
    found = [r for r in rows if r["impl"] == impl and r["scenario"] == scenario]
    return sum(int(r.get(key) or 0) for r in found), len({r["round"] for r in found})


def lost_notifications(rows: Sequence[Row], impl: str) -> tuple[int, int]:
    found = [r for r in rows if r["impl"] == impl and r["scenario"] == "notify"]
    return sum(int((r.get("errors") or {}).get("lost_notifications", 0)) for r in found), len(found)


def error_total(rows: Sequence[Row], impl: str) -> tuple[int, list[str]]:
    """Every error counter over an implementation's mcpload rows, and the scenarios not ok."""
    total = 0
    not_ok: list[str] = []
    for r in rows:
        if r["impl"] != impl or r["scenario"] == "batch":
            continue
        total += sum(v for k, v in (r.get("errors") or {}).items() if k != "samples" and isinstance(v, int))
        if not r.get("ok"):
            not_ok.append(f"{r['scenario']}@r{r['round']}")
    return total, not_ok


def check_lines(rows: Sequence[Row], transport: str, rounds: int) -> list[Line]:
    lines: list[Line] = []
    h_lost, h_n = lost_notifications(rows, HERALD)
    b_lost, _ = lost_notifications(rows, BASE)
    ok = h_n == rounds and h_lost == 0
    lines.append(Line("lost notifications (all rounds)", str(h_lost), str(b_lost), "-", "herald 0", _pf(ok)))
    if transport == "stdio":
        h_ans, h_rounds = count(rows, HERALD, "eof", "answered_result")
        h_reps, _ = count(rows, HERALD, "eof", "reps")
        h_un, _ = count(rows, HERALD, "eof", "unanswered")
        b_ans, _ = count(rows, BASE, "eof", "answered_result")
        b_reps, _ = count(rows, BASE, "eof", "reps")
        b_un, _ = count(rows, BASE, "eof", "unanswered")
        ok = h_rounds == rounds and h_reps > 0 and h_ans == h_reps and h_un == 0
        lines.append(
            Line(
                "piped batch then EOF: echo answered",
                f"{h_ans}/{h_reps} ({h_un} unanswered)",
                f"{b_ans}/{b_reps} ({b_un} unanswered)",
                "-",
                "herald all, 0 unanswered",
                _pf(ok),
            )
        )
        h_b = [r for r in rows if r["impl"] == HERALD and r["scenario"] == "batch"]
        b_b = [r for r in rows if r["impl"] == BASE and r["scenario"] == "batch"]
        lines.append(
            Line(
                "whole process: echo answered",
                f"{sum(bool(r['answered']) for r in h_b)}/{len(h_b)}",
                f"{sum(bool(r['answered']) for r in b_b)}/{len(b_b)}",
                "-",
                "-",
                "info",
            )
        )
    h_err, h_bad = error_total(rows, HERALD)
    b_err, b_bad = error_total(rows, BASE)
    expected = len(SCENARIOS[transport].split(",")) * rounds
    h_rows = sum(1 for r in rows if r["impl"] == HERALD and r["scenario"] != "batch")
    ok = h_err == 0 and not h_bad and h_rows == expected
    lines.append(
        Line(
            "protocol check: error counters (rows not ok)",
            f"{h_err} ({len(h_bad)}; {h_rows}/{expected} rows)",
            f"{b_err} ({len(b_bad)})",
            "-",
            "herald 0, every row ok",
            _pf(ok),
        )
    )
    return lines


def _pf(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def render(lines: Sequence[Line]) -> str:
    out = [
        f"| metric | herald (median) | {BASE} (median; {FLOOR} where named) "
        "| paired ratio herald/baseline (min–max) | target | result |",
        "|---|---|---|---|---|---|",
    ]
    out += [f"| {x.metric} | {x.herald} | {x.base} | {x.ratio} | {x.target} | {x.result} |" for x in lines]
    return "\n".join(out)


# --------------------------------------------------------------------------- environment


def probe(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"? ({e})"
    return r.stdout.strip() or f"? (rc={r.returncode})"


def environment(entries: Sequence[Entry]) -> dict[str, str]:
    versions = "import importlib.metadata as m, platform; print(platform.python_version(), m.version({!r}))"
    env = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "nproc": str(os.cpu_count()),
        "machine": f"{platform.machine()}, Linux {platform.release()}",
        "load generator python": platform.python_version(),
        "herald commit": probe(["git", "rev-parse", "--short", "HEAD"]),
    }
    for e, pkg in zip(entries, ("herald", "mcp"), strict=False):  # the floor is stdlib only
        env[f"{e.name} python, {pkg}"] = probe([e.argv[0], "-c", versions.format(pkg)])
    return env


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument(
        "--shared", type=Path, default=REPO.parent / "shared" / "bench", help="shared bench folder"
    )
    p.add_argument("--anchors", type=Path, default=Path("~/.cache/herald-anchors"), help="anchor venvs")
    p.add_argument("--out", type=Path, help="output folder (default bench/results/<timestamp>)")
    p.add_argument("--eof-reps", type=int, default=10, help="piped-batch spawns per round (default 10)")
    p.add_argument("--batch-reps", type=int, default=3, help="whole-process batch runs per round (default 3)")
    p.add_argument("--transport", choices=sorted(SCENARIOS), default="stdio")
    p.add_argument("--port-base", type=int, default=18700, help="first loopback port for http")
    p.add_argument("--max-seconds", type=float, default=1200, help="bound on the whole run (default 1200)")
    a = p.parse_args(argv)
    if not 1 <= a.rounds <= 20:
        p.error("--rounds must be 1..20")
    if not 1 <= a.eof_reps <= 100 or not 0 <= a.batch_reps <= 20:
        p.error("--eof-reps must be 1..100 and --batch-reps 0..20")
    a.shared = a.shared.expanduser().resolve()
    a.anchors = a.anchors.expanduser().resolve()
    a.out = (a.out or REPO / "bench" / "results" / time.strftime("%Y%m%d-%H%M%S")).expanduser().resolve()
    return a


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    entries = build_entries(args.shared, args.anchors, args.transport)
    batch = args.shared / "fixtures" / "batch_init_echo.jsonl"
    needed = [args.shared / "mcpload.py", batch, *(Path(e.argv[0]) for e in entries)]
    needed += [Path(e.argv[1]) for e in entries]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        print("missing: " + ", ".join(missing), file=sys.stderr)
        print("(the SDK venv comes from the shared bench folder's setup-anchors)", file=sys.stderr)
        return 2
    for sub in ("rounds", "stderr"):
        (args.out / sub).mkdir(parents=True, exist_ok=True)
    budget = Budget(time.monotonic() + args.max_seconds)
    t_start = time.monotonic()
    env = environment(entries)
    floor = run_batch(Entry("rss-floor", ("/bin/true",)), Path(os.devnull), 0, 0, args.out, budget)
    env["peak RSS floor (a /bin/true child)"] = fmt_mib(float(floor["peak_rss_kb"]))
    rows: list[Row] = []
    for rnd in range(args.rounds):
        order = entries if rnd % 2 == 0 else entries[::-1]
        for idx, entry in enumerate(order):
            if budget.allows(f"round {rnd + 1} {entry.name} mcpload", 30):
                port = args.port_base + (len(entries) * rnd + idx) % 200
                rows += run_mcpload(entry, args.transport, port, rnd, args, args.out, budget)
        if args.transport != "stdio":
            continue  # the batch file is a stdio exchange
        for rep in range(args.batch_reps):
            for entry in (e for e in order if e.scenarios is None):
                if budget.allows(f"round {rnd + 1} {entry.name} batch {rep}"):
                    rows.append(run_batch(entry, batch, rnd, rep, args.out, budget))
        done = [r for r in rows if r["scenario"] == "batch" and r["round"] == rnd]
        print(
            f"round {rnd + 1}/{args.rounds} batch: "
            + ", ".join(f"{r['impl']} {r['wall_ms']:.0f} ms {'ok' if r['ok'] else 'NOT OK'}" for r in done),
            flush=True,
        )

    with (args.out / "raw.jsonl").open("w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)

    cells: dict[str, Any] = {}
    lines = [metric_line(rows, m, args.rounds, cells) for m in METRICS[args.transport]]
    lines += check_lines(rows, args.transport, args.rounds)
    checked = [x for x in lines if x.result != "info"]
    failed = [x.metric for x in checked if x.result != "PASS"]
    if budget.cut_short:
        failed.append("run cut short by --max-seconds: " + ", ".join(budget.cut_short))
    elapsed = time.monotonic() - t_start

    heading = (
        f"herald vs sdk_high, {args.transport}, {args.rounds} interleaved rounds, "
        f"{env['date']}, {env['nproc']} cores, {elapsed:.0f} s"
    )
    table = render(lines)
    verdict = (
        f"all {len(checked)} targets pass"
        if not failed
        else f"{len(failed)} of {len(checked)} targets fail: " + "; ".join(failed)
    )
    text = f"{heading}\n\n{table}\n\n{verdict}\n"
    (args.out / "table.md").write_text(text)
    summary = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "environment": env,
        "elapsed_s": round(elapsed, 1),
        "cells": cells,
        "lines": [vars(x) for x in lines],
        "failed": failed,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(f"\n{text}\nwritten to {args.out}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
