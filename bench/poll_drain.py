"""1,000 bulk jobs started at once, drained by 50 concurrent pollers of `get_job_status`.

Starts `giftgenius serve` over HTTP on a fresh SQLite file (as a subprocess on a free
port, optionally under cProfile), starts `--jobs` bulk analyses of `--rows` rows each,
then `--pollers` concurrent clients loop over the jobs that have not ended, each poll
passing the `nextCursor` that job last got (or none with `--no-cursor`). A job counts as
ended when a poll sees it completed, failed or cancelled.

It prints how many jobs had ended over time, when the last one ended, and the mean bytes
and latency of a `get_job_status` answer. Bounded: it stops at `--timeout` seconds
whatever is left, then stops the server (SIGINT, so a cProfile run writes its profile).

  python bench/poll_drain.py [--jobs 1000] [--pollers 50] [--rows 20] [--timeout 150]
      [--no-cursor] [--era modern|handshake] [--honor-poll-after]
      [--profile out.prof] [--server-arg=--max-running-jobs=8 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from herald.testing import free_port, wait_until_listening

try:
    import uvloop
except ImportError:  # the stock loop will do, a little slower
    uvloop = None  # type: ignore[assignment]

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HANDSHAKE_VERSION = "2025-11-25"
TERMINAL = {"completed", "failed", "cancelled"}
MARKS = (10, 20, 30, 45, 60, 90, 120, 150, 200, 300)
#: Hard cap on the server's RSS; the run is stopped above it.
MAX_RSS_BYTES = 6 * 1024**3


def csv_text(rows: int) -> str:
    lines = ["name,department,interests,budget"]
    lines += [f"Person {n},Dept {n % 7},hiking;coffee,40" for n in range(1, rows + 1)]
    return "\n".join(lines) + "\n"


def parse_answer(response: Any) -> dict[str, Any]:
    """The JSON-RPC answer of a POST, whether sent as JSON or as an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        answer: dict[str, Any] | None = None
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = orjson.loads(line[5:])
                if "id" in message and ("result" in message or "error" in message):
                    answer = message
        if answer is None:
            raise RuntimeError(f"no answer in the stream: {response.text[:200]}")
        return answer
    found: dict[str, Any] = response.json()
    return found


class RawResponse:
    """What the benchmark reads of an answer (the few attributes of `httpx.Response` it uses)."""

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, content

    @property
    def text(self) -> str:
        return self.content.decode()

    def json(self) -> Any:
        return orjson.loads(self.content)


class RawPool:
    """A lean HTTP/1.1 keep-alive client for loopback: httpx spends about 6 ms of CPU per call,
    enough for the benchmark's client to use a whole core and cap the load it offers."""

    def __init__(self, url: str, max_connections: int) -> None:
        parts = httpx.URL(url)
        self.host, self.port, self.path = parts.host, parts.port or 80, parts.raw_path.decode()
        self._free: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(max_connections)

    async def post(self, url: str, *, json: Any, headers: dict[str, str]) -> RawResponse:
        body = orjson.dumps(json)
        async with self._slots:
            connection = (
                self._free.pop() if self._free else await asyncio.open_connection(self.host, self.port)
            )
            reader, writer = connection
            head = [
                f"POST {self.path} HTTP/1.1",
                f"host: {self.host}:{self.port}",
                "content-type: application/json",
            ]
            head += [f"{name}: {value}" for name, value in headers.items()]
            head.append(f"content-length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            try:
                response = await self._read(reader)
            except (OSError, asyncio.IncompleteReadError) as lost:
                writer.close()
                raise httpx.ReadError(repr(lost)) from lost
            if response.headers.get("connection", "").lower() == "close":
                writer.close()
            else:
                self._free.append(connection)
            return response

    async def _read(self, reader: asyncio.StreamReader) -> RawResponse:
        status_line = await reader.readuntil(b"\r\n")
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            content = b"".join(chunks)
        else:
            content = b""
        return RawResponse(status, headers, content)

    async def delete(self, url: str, headers: dict[str, str]) -> None:
        return None  # sessions expire; the server is stopped after the run anyway

    async def aclose(self) -> None:
        for _, writer in self._free:
            writer.close()
        self._free.clear()


class Caller:
    """One client: a 2026-07-28 sender of stateless POSTs, or a handshake-era session."""

    def __init__(self, http: httpx.AsyncClient, url: str, era: str) -> None:
        self.http, self.url, self.era = http, url, era
        self.session: str | None = None
        self._ids = 0
        self.listen_bytes = 0
        self._listen: asyncio.Task[None] | None = None

    def listen(self, http: httpx.AsyncClient) -> None:
        """Open the session's GET stream and read it in the background (what `connect_http` does)."""

        async def read() -> None:
            headers = self._headers("listen")
            headers["accept"] = "text/event-stream"
            with contextlib.suppress(httpx.HTTPError):
                async with http.stream("GET", self.url, headers=headers) as response:
                    async for chunk in response.aiter_bytes():
                        self.listen_bytes += len(chunk)

        self._listen = asyncio.create_task(read())

    async def open(self) -> None:
        if self.era != "handshake":
            return
        response = await self.http.post(
            self.url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "poll_drain", "version": "0"},
                },
            },
            headers={"accept": "application/json, text/event-stream"},
        )
        parse_answer(response)
        self.session = response.headers["mcp-session-id"]
        await self.http.post(
            self.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=self._headers("notifications/initialized"),
        )

    async def close(self) -> None:
        if self._listen is not None:
            self._listen.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listen
        if self.session is not None:
            with contextlib.suppress(httpx.HTTPError):
                await self.http.delete(self.url, headers=self._headers("delete"))

    def _headers(self, method: str, name: str | None = None) -> dict[str, str]:
        if self.era == "handshake":
            headers = {
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": HANDSHAKE_VERSION,
            }
            if self.session is not None:
                headers["mcp-session-id"] = self.session
            return headers
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": method,
        }
        if name is not None:
            headers["mcp-name"] = name
        return headers

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], http: httpx.AsyncClient | None = None
    ) -> tuple[dict[str, Any], int]:
        """(structuredContent, bytes of the answer's body)."""
        self._ids += 1
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if self.era != "handshake":
            params["_meta"] = MODERN_META
        body = {"jsonrpc": "2.0", "id": self._ids, "method": "tools/call", "params": params}
        sender = http or self.http
        response = await sender.post(self.url, json=body, headers=self._headers("tools/call", tool))
        answer = parse_answer(response)
        if "result" not in answer:
            raise RuntimeError(f"{tool}: {answer}")
        return answer["result"]["structuredContent"], len(response.content)


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user+system) per thread name of `pid`."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
                name = "loop thread" if int(task) == pid else "other threads"
                fields = stat[stat.rindex(")") + 2 :].split()
                seconds = (int(fields[11]) + int(fields[12])) / ticks
                found[name] = found.get(name, 0.0) + seconds
    return found


async def run(args: argparse.Namespace, url: str, server_pid: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=args.pollers + 8, max_keepalive_connections=args.pollers + 8)
    csv = csv_text(args.rows)
    start_limits = httpx.Limits(max_connections=min(args.start_concurrency or args.jobs, 900))
    async with (
        httpx.AsyncClient(timeout=args.timeout, limits=limits) as http,
        httpx.AsyncClient(timeout=args.timeout, limits=start_limits) as starts_http,
        httpx.AsyncClient(
            timeout=httpx.Timeout(10, read=None), limits=httpx.Limits(max_connections=args.pollers + 8)
        ) as listens_http,
    ):
        if args.client == "raw":
            http = RawPool(url, args.pollers)  # type: ignore[assignment]
            starts_http = RawPool(url, min(args.start_concurrency or args.jobs, 900))  # type: ignore[assignment]
        callers = [Caller(http, url, args.era) for _ in range(args.pollers)]
        await asyncio.gather(*(caller.open() for caller in callers))
        if args.listen:
            for caller in callers:
                caller.listen(listens_http)
        cpu_before = thread_cpu(server_pid)
        client_cpu_before = time.process_time()

        # Start every job: `--start-concurrency` starts in flight at a time (0: all at once), job n
        # by client n % pollers. Pollers follow each job from the moment its start is answered.
        started_at = time.perf_counter()
        deadline = started_at + args.timeout
        pending: asyncio.Queue[str] = asyncio.Queue()
        job_ids: list[str] = []
        in_flight = asyncio.Semaphore(args.start_concurrency or args.jobs)
        start_errors: list[str] = []

        async def start(n: int) -> None:
            async with in_flight:
                try:
                    found, _ = await callers[n % len(callers)].call_tool(
                        "start_bulk_gift_analysis", {"csv": csv}, http=starts_http
                    )
                except (httpx.HTTPError, RuntimeError) as failed:
                    start_errors.append(repr(failed)[:200])
                    return
            job_ids.append(found["jobId"])
            if not args.poll_after_starts:
                pending.put_nowait(found["jobId"])

        async def start_all() -> float:
            await asyncio.gather(*(start(n) for n in range(args.jobs)))
            if args.poll_after_starts:
                for job_id in job_ids:
                    pending.put_nowait(job_id)
            return time.perf_counter() - started_at

        starting = asyncio.create_task(start_all())
        cursors: dict[str, str] = {}
        last_poll: dict[str, float] = {}
        ended_at: dict[str, float] = {}
        events_seen: dict[str, int] = {}
        latencies: list[float] = []
        sizes: list[int] = []
        statuses_seen: dict[str, int] = {}
        errors: list[str] = []
        stop = asyncio.Event()

        async def poller(caller: Caller) -> None:
            while not stop.is_set() and time.perf_counter() < deadline:
                try:
                    job_id = await asyncio.wait_for(pending.get(), 0.5)
                except TimeoutError:
                    continue
                if args.honor_poll_after:
                    wait = last_poll.get(job_id, 0.0) + 0.5 - time.perf_counter()
                    if wait > 0:
                        await asyncio.sleep(min(wait, max(0.0, deadline - time.perf_counter())))
                arguments: dict[str, Any] = {"jobId": job_id}
                if args.cursor and job_id in cursors:
                    arguments["cursor"] = cursors[job_id]
                began = time.perf_counter()
                try:
                    status, size = await caller.call_tool("get_job_status", arguments)
                except (httpx.HTTPError, RuntimeError) as failed:
                    errors.append(repr(failed)[:200])
                    pending.put_nowait(job_id)
                    continue
                now = time.perf_counter()
                last_poll[job_id] = now
                latencies.append(now - began)
                sizes.append(size)
                cursors[job_id] = status["nextCursor"]
                events_seen[job_id] = events_seen.get(job_id, 0) + len(status["events"])
                statuses_seen[status["status"]] = statuses_seen.get(status["status"], 0) + 1
                if status["status"] in TERMINAL:
                    ended_at[job_id] = now - started_at
                    if len(ended_at) + len(start_errors) >= args.jobs:
                        stop.set()
                else:
                    pending.put_nowait(job_id)

        async def watch() -> list[dict[str, Any]]:
            samples: list[dict[str, Any]] = []
            while not stop.is_set() and time.perf_counter() < deadline:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 5)
                rss = rss_bytes(server_pid)
                samples.append(
                    {
                        "t": round(time.perf_counter() - started_at, 1),
                        "ended": len(ended_at),
                        "polls": len(latencies),
                        "rss_mib": round(rss / 2**20, 1),
                    }
                )
                if args.progress:
                    print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
                if rss > MAX_RSS_BYTES:
                    errors.append(f"server RSS {rss} above the cap: stopped")
                    stop.set()
            return samples

        watcher = asyncio.create_task(watch())
        await asyncio.gather(*(poller(caller) for caller in callers))
        stop.set()
        starts_took = await starting
        samples = await watcher
        cpu_after = thread_cpu(server_pid)
        client_cpu = time.process_time() - client_cpu_before
        listened = sum(caller.listen_bytes for caller in callers)
        await asyncio.gather(*(caller.close() for caller in callers))

    ends = sorted(ended_at.values())
    ordered = sorted(latencies)
    cpu = {
        name: round(cpu_after.get(name, 0.0) - cpu_before.get(name, 0.0), 1)
        for name in cpu_after
        if cpu_after.get(name, 0.0) - cpu_before.get(name, 0.0) >= 0.1
    }
    return {
        "era": args.era,
        "client": args.client,
        "cursor": args.cursor,
        "listen": args.listen,
        "honor_poll_after": args.honor_poll_after,
        "jobs": args.jobs,
        "pollers": args.pollers,
        "rows": args.rows,
        "server_args": args.server_arg,
        "starts_took_s": round(starts_took, 2),
        "jobs_ended": len(ends),
        "drain_s": round(ends[-1], 2) if len(ends) == args.jobs else None,
        "ended_by": {f"{mark}s": sum(1 for t in ends if t <= mark) for mark in MARKS if mark <= args.timeout},
        "first_end_s": round(ends[0], 2) if ends else None,
        "median_end_s": round(statistics.median(ends), 2) if ends else None,
        "polls": len(latencies),
        "polls_per_s": round(len(latencies) / (ends[-1] if len(ends) == args.jobs else args.timeout), 1),
        "poll_bytes_mean": round(statistics.fmean(sizes)) if sizes else None,
        "poll_ms_mean": round(statistics.fmean(latencies) * 1000, 2) if latencies else None,
        "poll_ms_p50": round(statistics.median(ordered) * 1000, 2) if ordered else None,
        "poll_ms_p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2)
        if ordered
        else None,
        "events_per_job_seen_mean": round(statistics.fmean(events_seen.values()), 1) if events_seen else None,
        "statuses_seen": statuses_seen,
        "server_cpu_s_by_thread": cpu,
        "client_cpu_s": round(client_cpu, 1),
        "server_rss_mib_max": max((s["rss_mib"] for s in samples), default=None),
        "listen_bytes": listened,
        "start_errors": len(start_errors),
        "errors": len(errors),
        "first_errors": (start_errors + errors)[:3],
        "samples": samples,
    }


def waiting_unbounded() -> list[str]:
    """`--max-waiting-jobs 0` where the server has the option (older code queues without bound)."""
    shown = subprocess.run(
        [sys.executable, "-m", "giftgenius", "serve", "--help"], capture_output=True, text=True, check=True
    )
    return ["--max-waiting-jobs", "0"] if "--max-waiting-jobs" in shown.stdout else []


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--pollers", type=int, default=50)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds from the first start")
    parser.add_argument("--no-cursor", dest="cursor", action="store_false", help="poll without cursors")
    parser.add_argument("--era", choices=("modern", "handshake"), default="modern")
    parser.add_argument(
        "--honor-poll-after", action="store_true", help="poll a job at most every pollAfterMs (500 ms)"
    )
    parser.add_argument(
        "--start-concurrency", type=int, default=0, help="starts in flight at once (0: all at once)"
    )
    parser.add_argument(
        "--poll-after-starts", action="store_true", help="poll only once every start was answered"
    )
    parser.add_argument(
        "--listen", action="store_true", help="handshake era: each client also holds its GET stream open"
    )
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw", help="the HTTP client")
    parser.add_argument("--launcher", type=Path, help="a script to run instead of `-m giftgenius`")
    parser.add_argument("--profile", type=Path, help="run the server under cProfile, writing here")
    parser.add_argument("--server-arg", action="append", default=[], help="extra `serve` argument")
    parser.add_argument("--progress", action="store_true", help="print a sample every 5 s to stderr")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "jobs.db"
        command = [sys.executable]
        if args.profile is not None:
            command += ["-m", "cProfile", "-o", str(args.profile)]
        command += [str(args.launcher)] if args.launcher is not None else ["-m", "giftgenius"]
        command += [
            "serve",
            "--port",
            str(port),
            "--store",
            f"sqlite:///{store}",
            "--max-jobs-per-client",
            "0",
            *waiting_unbounded(),
            *args.server_arg,
        ]
        log = open(Path(folder) / "server.log", "w")  # noqa: SIM115
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_listening(port, server, timeout=60)
            runner = uvloop.run if uvloop is not None else asyncio.run
            report = runner(run(args, f"http://127.0.0.1:{port}/mcp", server.pid))
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if report["jobs_ended"] == args.jobs else 1


if __name__ == "__main__":
    sys.exit(main())
