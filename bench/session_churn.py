"""Open and delete many handshake-era sessions; the server's memory must come back.

Starts `bench/echo_server.py --transport http` on a free loopback port, opens and
deletes sessions (initialize, one call, DELETE) over one keep-alive connection, and
reads the server's RSS from /proc before and after. A warm-up round first lets the
allocator reach its working size. Exit 0 when the growth is within the bound.

  python bench/session_churn.py [--sessions 10000] [--bound-mib 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "churn", "version": "1"},
        },
    }
)
CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}},
    }
)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def churn(port: int, count: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(count):
        connection.request("POST", "/mcp", INITIALIZE, HEADERS)
        response = connection.getresponse()
        response.read()
        session_id = response.getheader("mcp-session-id")
        if response.status != 200 or not session_id:
            raise RuntimeError(f"initialize answered {response.status}")
        session = {**HEADERS, "mcp-session-id": session_id}
        connection.request("POST", "/mcp", CALL, session)
        reply = connection.getresponse()
        assert b'"text":"x"' in reply.read()
        connection.request("DELETE", "/mcp", headers={"mcp-session-id": session_id})
        deleted = connection.getresponse()
        deleted.read()
        assert deleted.status == 200, deleted.status
    connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--bound-mib", type=float, default=5.0)
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "echo_server.py"), "--transport", "http", "--port", str(port)]
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    print("the server did not start", file=sys.stderr)
                    return 2
                time.sleep(0.1)
        churn(port, args.warmup)
        before = rss_kib(server.pid)
        started = time.monotonic()
        churn(port, args.sessions)
        elapsed = time.monotonic() - started
        after = rss_kib(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=10)
    growth_mib = (after - before) / 1024
    print(f"{args.sessions} sessions opened, used and deleted in {elapsed:.1f} s")
    print(f"server RSS before {before / 1024:.1f} MiB, after {after / 1024:.1f} MiB")
    print(f"growth {growth_mib:+.2f} MiB")
    ok = growth_mib <= args.bound_mib
    print(f"bound {args.bound_mib} MiB: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
