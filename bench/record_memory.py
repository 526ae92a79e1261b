"""How much memory `herald record` and `herald lint` hold while far more than one message passes.

    python bench/record_memory.py [--mib 320]

Four cases, each through the real command, each with `--mib` MiB, the command's peak
resident memory (Linux's VmHWM) read while it still runs:

- post: a POST of that size through `herald record --upstream` to `tests/wire/heavy.py`,
  which reads the body and drops it;
- event: one SSE event of that size from the same upstream;
- stdio: a server writing that much to a host that reads nothing for 3 s, then all of it;
- lint: `herald lint -` given one line of that size.

Run it with `PYTHONPATH=<an older checkout>/src` to measure the code before a change.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
HERALD = [sys.executable, "-c", "from herald.cli.main import main; main()"]
HEAVY = [sys.executable, str(REPO / "tests" / "wire" / "heavy.py")]
MIB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(argv: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing listens on port {port}")
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=20)


def peak_mib(process: subprocess.Popen[bytes]) -> float:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmHWM for {process.pid}")


@contextlib.contextmanager
def proxy(log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    upstream, port = free_port(), free_port()
    with (
        serving([*HEAVY, "--port", str(upstream)], upstream),
        serving(
            [
                *HERALD,
                "record",
                "-o",
                str(log),
                "--upstream",
                f"http://127.0.0.1:{upstream}/",
                "--port",
                str(port),
            ],
            port,
        ) as recorder,
    ):
        yield f"http://127.0.0.1:{port}/", recorder


def post(mib: int, log: Path) -> float:
    def body() -> Iterator[bytes]:
        for _ in range(mib):
            yield b"x" * MIB

    with proxy(log) as (url, recorder):
        headers = {"content-type": "application/json", "content-length": str(mib * MIB)}
        httpx.post(url + "sink", content=body(), headers=headers, timeout=300).raise_for_status()
        return peak_mib(recorder)


def event(mib: int, log: Path) -> float:
    with proxy(log) as (url, recorder):
        with httpx.stream("GET", url + f"long-event?mib={mib}", timeout=300) as response:
            for _ in response.iter_raw():
                pass
        return peak_mib(recorder)


WRITER = """
import sys
line = b'"' + b"x" * ({mib} - 3) + b'"\\n'
for _ in range({count}):
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
"""


def stdio(mib: int, log: Path) -> float:
    server = WRITER.format(mib=MIB, count=mib)
    recorder = subprocess.Popen(
        [*HERALD, "record", "-o", str(log), "--", sys.executable, "-c", server],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert recorder.stdout is not None
    time.sleep(3)  # the host reads nothing for a while
    peak = peak_mib(recorder)
    while recorder.stdout.read(MIB):
        pass
    recorder.wait(timeout=60)
    return peak


def lint(mib: int, _log: Path) -> float:
    process = subprocess.Popen(
        [*HERALD, "lint", "-", "--format", "json"], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    assert process.stdin is not None
    for _ in range(mib):
        process.stdin.write(b"x" * MIB)
    process.stdin.write(b"\n")
    process.stdin.flush()
    peak = peak_mib(process)
    process.stdin.close()
    process.wait(timeout=60)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=320, help="How much passes in each case.")
    options = parser.parse_args()
    peaks = {}
    with tempfile.TemporaryDirectory() as scratch:
        for case in (post, event, stdio, lint):
            log = Path(scratch) / f"{case.__name__}.jsonl"
            peaks[case.__name__] = round(case(options.mib, log), 1)
            print(
                f"{case.__name__:>6}: {options.mib} MiB passed, peak {peaks[case.__name__]:.0f} MiB",
                flush=True,
            )
            log.unlink(missing_ok=True)
    print(json.dumps({"mib": options.mib, "peak_mib": peaks}))


if __name__ == "__main__":
    main()
