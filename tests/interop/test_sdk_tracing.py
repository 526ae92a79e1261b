"""The official Python SDK client, with its own OpenTelemetry instrumentation, calls a
GiftGenius that exports over OTLP: the server's spans join the client's trace, in both eras.

The client runs in a process of its own, as an application would: it sets the global
tracer provider (which the SDK reports to) and prints its spans. The server exports to a
receiver this test runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from contextlib import ExitStack
from pathlib import Path

import pytest

from herald.testing import free_port
from herald.testing.otlp import OtlpReceiver
from tests.servers import GIFTGENIUS, REPO, started

pytestmark = pytest.mark.slow

CLIENT = textwrap.dedent(
    """
    import asyncio, json, sys

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    async def main(url, mode):
        async with httpx2.AsyncClient() as http, Client(
            streamable_http_client(url, http_client=http), mode=mode, cache=None
        ) as client:
            await client.call_tool("suggest_gifts", {"recipient": "friend who loves tea", "budget": 40})

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    print(json.dumps([
        {"name": span.name, "kind": span.kind.name, "trace_id": format(span.context.trace_id, "032x"),
         "span_id": format(span.context.span_id, "016x")}
        for span in exporter.get_finished_spans()
    ]))
    """
)


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_the_servers_spans_join_the_sdk_clients_trace(mode: str, version: str, tmp_path: Path) -> None:
    with OtlpReceiver() as receiver, ExitStack() as stack:
        port = free_port()
        argv = [*GIFTGENIUS, "serve", "--quiet", "--port", str(port), "--store", "memory"]
        stack.enter_context(
            started(argv, tmp_path / "server.log", port, env=receiver.environment("giftgenius"))
        )
        url = f"http://127.0.0.1:{port}/mcp"
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, url, mode], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        client_spans = json.loads(done.stdout)
        (call,) = [span for span in client_spans if "tools/call" in span["name"]]
        assert call["kind"] == "CLIENT"
        (server_span,) = receiver.wait_for("tools/call suggest_gifts")
    assert server_span.kind == "SERVER"
    assert server_span.trace_id == call["trace_id"], "one trace, from the SDK client's call to the server"
    assert server_span.parent_span_id == call["span_id"]
    assert server_span.attributes["mcp.protocol.version"] == version
    assert server_span.attributes["gen_ai.tool.name"] == "suggest_gifts"
