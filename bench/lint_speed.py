"""How fast `herald lint` reads a long log, and whether its memory grows with the log.

    python bench/lint_speed.py [--messages 1000000] [--out DIR]

Writes a log of real-looking traffic with `MessageLog` (the recorders' writer): HTTP
sessions that initialize, list tools, call them with progress, read a resource, and
run a job whose events stream, then end (DELETE), with a 2026-07-28 exchange each. Then
it lints it in a child process (so memory is that process's alone) and reports
records per second and the peak resident memory; the same for a tenth of the log, so
the two peaks can be compared. The target: 1,000,000 messages in at most 10 s, and the
peak no larger for the whole log than for its tenth.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from herald.wire.writer import MessageLog

TOOLS = [
    {
        "name": "suggest_gifts",
        "inputSchema": {
            "type": "object",
            "properties": {"occasion": {"type": "string"}, "budget": {"type": "number"}},
            "required": ["occasion", "budget"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"gifts": {"type": "array", "items": {"type": "object"}}},
            "required": ["gifts"],
        },
    }
]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(request_id: int, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method} | ({"params": params} if params else {})


def notification(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method} | ({"params": params} if params else {})


def answer(request_id: int, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


GIFTS = [{"name": "Board game", "price": 35, "category": "games", "reason": "loves board games"}]
CALL_RESULT = {
    "content": [{"type": "text", "text": "1. Board game ($35)"}],
    "structuredContent": {"gifts": GIFTS},
}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench"}}
INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "b"}}


def write_log(path: Path, messages: int) -> int:
    """A log of about `messages` messages; returns how many were written."""
    written = 0
    with path.open("wb") as file:
        log = MessageLog(file, clock=itertools.count(1_764_633_600, 0.0001).__next__)

        def say(sender: Any, message: Any, session: str | None, stream: str, **extra: Any) -> None:
            nonlocal written
            log.message(sender, "http", orjson.dumps(message), session=session, stream=stream, **extra)
            written += 1

        log.start("http", "bench", "http://127.0.0.1:8000/mcp")
        streams = (f"post-{number}" for number in itertools.count(1))
        for number in itertools.count():
            if written >= messages:
                break
            session, stream = f"session-{number}", next(streams)
            say("client", request(0, "initialize", INIT), None, stream)
            say("server", answer(0, INIT_RESULT), session, stream)
            say("client", notification("notifications/initialized"), session, next(streams))
            stream = next(streams)
            say("client", request(1, "tools/list"), session, stream)
            say("server", answer(1, {"tools": TOOLS}), session, stream)
            for call in range(2, 40):
                stream = next(streams)
                arguments = {"occasion": "birthday", "budget": 20 + call}
                params = {
                    "name": "suggest_gifts",
                    "arguments": arguments,
                    "_meta": {"progressToken": f"p{call}"},
                }
                say("client", request(call, "tools/call", params), session, stream)
                for step in (1, 2):
                    progress = {"progressToken": f"p{call}", "progress": step, "total": 2}
                    say("server", notification("notifications/progress", progress), session, stream)
                say("server", answer(call, CALL_RESULT), session, stream)
            job = f"job-{number}"
            kinds: list[tuple[str, dict[str, Any]]] = [("created", {"tool": "bulk", "status": "pending"})]
            kinds.append(("started", {"status": "running"}))
            kinds += [("progress", {"percentage": float(p), "stage": "analysing"}) for p in range(5, 100, 5)]
            kinds.append(("completed", {"status": "completed", "resultResourceId": f"r://{job}"}))
            for sequence, (kind, payload) in enumerate(kinds, 1):
                event = {"eventId": f"{job}:{sequence}", "type": f"job.{kind}", "jobId": job}
                event |= {"timestamp": "2026-12-02T00:00:00Z", **payload}
                say(
                    "server",
                    notification(f"notifications/job/{kind}", event),
                    session,
                    "get-0",
                    event_id=f"{job}:{sequence}",
                )
            stream = next(streams)
            say("client", request(1, "tools/list", {"_meta": MODERN_META}), None, stream)
            say("server", answer(1, {"tools": TOOLS}), None, stream)
            log.http(
                "client", session=session, stream=next(streams), http={"method": "DELETE", "path": "/mcp"}
            )
        log.close()
    return written


CHILD = """
import resource, sys, time
from herald.lint import lint_file
found = []
started = time.perf_counter()
records = lint_file(sys.argv[1], found.append)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(records, len(found), seconds, peak)
"""


def lint_in_child(path: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    records, findings, seconds, peak_kib = out.stdout.split()
    return {
        "records": int(records),
        "findings": int(findings),
        "seconds": float(seconds),
        "peak_mib": int(peak_kib) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument(
        "--out", type=Path, default=None, help="Keep the logs here (default: a temporary one)."
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = options.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        rows = {}
        for label, count in (("tenth", options.messages // 10), ("whole", options.messages)):
            path = folder / f"lint-{label}.jsonl"
            started = time.perf_counter()
            written = write_log(path, count)
            wrote = time.perf_counter() - started
            measured = lint_in_child(path)
            measured |= {"messages": written, "mib": path.stat().st_size / 2**20, "write_seconds": wrote}
            measured["messages_per_second"] = written / measured["seconds"]
            rows[label] = measured
            print(
                f"{label:>6}: {written:>9,} messages ({measured['mib']:.0f} MiB) linted in "
                f"{measured['seconds']:.2f} s = {measured['messages_per_second']:,.0f}/s, "
                f"{measured['findings']} findings, peak {measured['peak_mib']:.0f} MiB",
                flush=True,
            )
        growth = rows["whole"]["peak_mib"] / rows["tenth"]["peak_mib"]
        print(f"peak memory, whole log / its tenth: {growth:.2f}")
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
