"""What a 2026-07-28 listen that never reads costs a real server in resident memory.

`giftgenius serve` (SQLite store, uvloop) runs `--jobs` bulk analyses of `--rows` rows
(204 events each at 100 rows or more) while `--listens` listens name them all and never
read a byte, their sockets' receive buffers kept small. The server's VmRSS is sampled
from before the jobs start until `--window` seconds after they end (a listener that
reads nothing is cut off 10 s after its buffer fills); the peak growth divided by the
listens is what each one pinned. A warm-up job runs first, so the job machinery is loaded.

  python bench/stalled_listens.py [--listens 50] [--jobs 100] [--rows 100] [--window 15]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from herald.testing import free_port, wait_until_listening

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
}
ENDED = ("completed", "failed", "cancelled")


def csv(rows: int) -> str:
    lines = ["name,department,interests,budget"]
    lines += [f"Person {n},Dept {n % 7},hiking;coffee,{20 + n % 80}" for n in range(rows)]
    return "\n".join(lines) + "\n"


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("stalled_listens: no VmRSS in /proc")


def call(client: httpx.Client, url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": tool, "arguments": arguments, "_meta": META}
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": tool}
    found: dict[str, Any] = client.post(url, json=body, headers=headers).json()["result"]["structuredContent"]
    return found


def run_jobs(client: httpx.Client, url: str, count: int, rows: int) -> list[str]:
    return [call(client, url, "start_bulk_gift_analysis", {"csv": csv(rows)})["jobId"] for _ in range(count)]


def wait_until_ended(client: httpx.Client, url: str, job_ids: list[str]) -> None:
    deadline = time.monotonic() + 300
    for job_id in job_ids:
        while call(client, url, "get_job_status", {"jobId": job_id})["status"] not in ENDED:
            if time.monotonic() > deadline:
                raise SystemExit("stalled_listens: the jobs did not end")
            time.sleep(0.1)


def open_listen(port: int, job_ids: list[str]) -> socket.socket:
    params = {"notifications": {"io.herald/jobEvents": {"jobIds": job_ids}}, "_meta": META}
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}
    ).encode()
    head = {**HEADERS, "mcp-method": "subscriptions/listen", "host": f"127.0.0.1:{port}"}
    head["content-length"] = str(len(body))
    request = b"POST /mcp HTTP/1.1\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in head.items())
    listen = socket.socket()
    listen.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listen.connect(("127.0.0.1", port))
    listen.sendall(request + b"\r\n" + body)
    return listen


def measure(listens: int, jobs: int, rows: int, window: float) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        store = f"sqlite:///{Path(folder) / 'bench.db'}"
        argv = [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--port", str(port), "--store", store]
        process = subprocess.Popen([*argv, "--max-jobs-per-client", "0"])
        sockets: list[socket.socket] = []
        try:
            wait_until_listening(port, process)
            url = f"http://127.0.0.1:{port}/mcp"
            with httpx.Client(timeout=30) as client:
                wait_until_ended(client, url, run_jobs(client, url, 1, rows))
                before = resident_bytes(process.pid)
                job_ids = run_jobs(client, url, jobs, rows)
                sockets = [open_listen(port, job_ids) for _ in range(listens)]
                wait_until_ended(client, url, job_ids)
            peak = before
            window_ends = time.monotonic() + window
            while time.monotonic() < window_ends:
                peak = max(peak, resident_bytes(process.pid))
                time.sleep(0.2)
        finally:
            for listen in sockets:
                listen.close()
            process.terminate()
            process.wait(timeout=30)
    return {
        "listens": listens,
        "events_per_listen": jobs * 204 if rows >= 100 else None,
        "rss_before_mib": round(before / 2**20, 1),
        "rss_peak_mib": round(peak / 2**20, 1),
        "kib_per_listen": round((peak - before) / listens / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--listens", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--window", type=float, default=15.0)
    args = parser.parse_args()
    print(json.dumps(measure(args.listens, args.jobs, args.rows, args.window), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
