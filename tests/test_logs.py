"""JSON log lines: one object a line, naming the request and the job they were logged under."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import herald.logs
from herald import JobContext, Server
from herald.testing import connect, job_ended
from tests.messages import INITIALIZE, INITIALIZED
from tests.wire.recording import HERALD


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The root logger writing JSON to a buffer, as `--log-format json` sets it up."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    herald.logs.configure("json", logging.INFO)
    buffer = io.StringIO()
    root.handlers[0].setStream(buffer)  # type: ignore[attr-defined]
    try:
        yield buffer
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        herald.logs.wanted = False


async def test_lines_name_their_request_and_job(json_lines: io.StringIO) -> None:
    server = Server("logged")
    log = logging.getLogger("demo")

    @server.tool
    async def hello() -> str:
        log.info("saying hello")
        return "hi"

    @server.job
    async def work(ctx: JobContext) -> dict[str, str]:
        log.warning("working")
        try:
            raise ValueError("a detail")
        except ValueError:
            log.exception("it went wrong")
        return {}

    async with connect(server) as client:
        await client.call_tool("hello")
        job_id = (await client.call_tool("work"))["structuredContent"]["jobId"]
        async with asyncio.timeout(10):
            await job_ended(server, job_id)
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    greeted = next(line for line in lines if line["message"] == "saying hello")
    assert greeted["level"] == "info"
    assert greeted["logger"] == "demo"
    assert greeted["request_id"] == 2, "the tools/call's id (initialize was 1)"
    assert greeted["session"]
    assert greeted["time"].endswith("+00:00")
    working = next(line for line in lines if line["message"] == "working")
    assert working["job_id"] == job_id
    failed = next(line for line in lines if line["message"] == "it went wrong")
    assert failed["error"] == "ValueError: a detail"
    assert "Traceback" in failed["traceback"]
    assert "trace_id" not in greeted, "telemetry is off: no span to name"


async def test_lines_inside_a_span_name_its_trace(json_lines: io.StringIO) -> None:
    from herald.testing.telemetry import recorded

    server = Server("traced")
    log = logging.getLogger("demo")

    @server.tool
    async def hello() -> str:
        log.info("saying hello")
        return "hi"

    with recorded() as seen:
        async with connect(server) as client:
            await client.call_tool("hello")
    span = seen.span("tools/call hello")
    greeted = next(json.loads(line) for line in json_lines.getvalue().splitlines() if "saying hello" in line)
    assert greeted["trace_id"] == f"{span.context.trace_id:032x}"
    assert greeted["span_id"] == f"{span.context.span_id:016x}"


@pytest.mark.slow  # a process of its own
def test_herald_run_logs_json(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(
        textwrap.dedent(
            """
            import logging
            from herald import Server

            server = Server("logged")


            @server.tool
            def hello() -> str:
                logging.getLogger("demo").warning("saying hello")
                return "hi"
            """
        )
    )
    lines = [
        INITIALIZE,
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hello", "arguments": {}}},
    ]
    ran = subprocess.run(
        [*HERALD, "run", "server.py", "--log-format", "json", "--store", "memory", "--quiet"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path)},
    )
    logged = [json.loads(line) for line in ran.stderr.splitlines()]
    said = next(line for line in logged if line["message"] == "saying hello")
    assert (said["level"], said["request_id"]) == ("warning", 2)
