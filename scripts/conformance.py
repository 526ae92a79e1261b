"""Run the official MCP conformance suites against examples/everything, as CI does.

Runs the shared `run-server-suite` four times (harness 0.1.16; 0.2.0-alpha.12 at
2025-11-25, at 2026-07-28, and with no spec version, which adds the tasks extension
scenarios at their default wire), at once, each against a fixture server of its own on a
free loopback port (so no run sees another's sessions or notifications) and with its
harness in a folder of its own (so no run's install replaces another's), and holds each
to its bar: 0.1.16 must pass all 32 scenarios with no WARN line, the alpha runs
must have 0 failures (a SKIP, such as the skills scenarios, counts as neither).
Exits non-zero if any run misses its bar. Stdlib only.

Without the shared folder (a developer's laptop) it says so and exits 0, unless CI=true,
where a missing suite is a failure.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO.parent / "shared" / "conformance" / "run-server-suite"
FIXTURE = REPO / "examples" / "everything" / "server.py"


@dataclass(frozen=True)
class Bar:
    """What one suite run must show."""

    passed: int | None = None  # exactly this many scenarios passed, when set
    no_warn: bool = False  # no scenario may pass with warnings


RUNS = [
    ([], Bar(passed=32, no_warn=True)),
    (["--harness", "0.2.0-alpha.12", "--spec-version", "2025-11-25"], Bar()),
    (["--harness", "0.2.0-alpha.12", "--spec-version", "2026-07-28"], Bar()),
    (["--harness", "0.2.0-alpha.12"], Bar()),  # every scenario at its default wire, tasks included
]
SUMMARY = re.compile(r"^conformance: (\d+) passed, (\d+) failed", re.MULTILINE)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_listening(port: int, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"conformance: the fixture server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("conformance: the fixture server did not start listening")


def harness_cache(run: int) -> str:
    """Where run number `run` keeps its harness: a folder of its own.

    The suite installs a harness version by replacing its folder; two runs of one version
    installing at once would pull it from under each other (on a machine that has none yet).
    """
    root = os.environ.get("CONFORMANCE_CACHE_DIR") or str(Path.home() / ".cache" / "mcp-conformance")
    return str(Path(root) / f"herald-run-{run}")


def run_suite(run: int, arguments: list[str], bar: Bar) -> tuple[bool, str]:
    """One suite run against a fixture server of its own: whether it met its bar, and what it said."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen([sys.executable, str(FIXTURE), "--port", str(port)], cwd=REPO)
    try:
        wait_until_listening(port, server)
        command = [str(SUITE), *arguments, url]
        environment = {**os.environ, "CONFORMANCE_CACHE_DIR": harness_cache(run)}
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=900, check=False, env=environment
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    output = f"\n$ {' '.join(command[1:-1]) or '(harness 0.1.16)'} {url}\n{done.stdout}{done.stderr}"
    found = SUMMARY.search(output)
    if found is None:
        return False, output + "conformance: no summary line from the suite\n"
    passed, failed = int(found.group(1)), int(found.group(2))
    ok = failed == 0 and done.returncode == 0
    if bar.passed is not None:
        ok = ok and passed == bar.passed
    if bar.no_warn and re.search(r"^WARN ", output, re.MULTILINE):
        output += "conformance: a scenario passed with warnings; none are allowed\n"
        ok = False
    return ok, output


def main() -> int:
    if not SUITE.exists():
        message = f"conformance: the suite is not at {SUITE}"
        if os.environ.get("CI") == "true":
            print(message, file=sys.stderr)
            return 1
        print(f"{message}; skipped (set CI=true to make this an error)")
        return 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(RUNS)) as pool:
        runs = [pool.submit(run_suite, run, arguments, bar) for run, (arguments, bar) in enumerate(RUNS)]
        results = []
        for run in runs:  # printed in the order of RUNS, each whole
            ok, output = run.result()
            print(output, flush=True)
            results.append(ok)
    # Suite runs that met their bar, in the closing-line form CI readers know.
    print(f"\nsuites: {sum(results)} passed, {len(results) - sum(results)} failed", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
