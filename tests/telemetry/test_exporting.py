"""Telemetry the OpenTelemetry way: on when the `OTEL_*` variables ask, exported over OTLP/HTTP."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

import herald.telemetry
from herald import Server
from herald.testing import connect
from herald.testing.otlp import OtlpReceiver


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_SERVICE_NAME": "gifts"}, False),
    ],
)
def test_the_environment_turns_it_on_only_when_it_asks_for_an_export(
    environ: dict[str, str], wanted: bool
) -> None:
    assert herald.telemetry.requested(environ) is wanted
    if not wanted:
        assert herald.telemetry.from_environment("demo", environ=environ) is None
        assert herald.telemetry.active is None


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        for name, value in found.environment().items():
            monkeypatch.setenv(name, value)
        yield found
        active = herald.telemetry.active
        herald.telemetry.disable()
        if active is not None:
            active.shutdown()  # its last export, while the receiver still listens


def build() -> Server:
    server = Server("exported")

    @server.tool
    async def echo(text: str) -> str:
        return text

    return server


async def test_spans_and_metrics_go_to_the_otlp_endpoint_named_by_the_server(receiver: OtlpReceiver) -> None:
    telemetry = herald.telemetry.from_environment("exported")
    assert telemetry is not None
    assert telemetry is herald.telemetry.active
    async with connect(build()) as client:
        await client.call_tool("echo", {"text": "hi"})
    await asyncio.to_thread(telemetry.flush)
    (span,) = receiver.wait_for("tools/call echo")
    assert span.service == "exported", "named after the server where OTEL_SERVICE_NAME says nothing"
    assert span.kind == "SERVER"
    assert "mcp.server.operation.duration" in receiver.metric_names()
    assert "mcp.server.session.duration" in receiver.metric_names()


async def test_otel_service_name_wins_over_the_servers_name(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "gifts-eu")
    telemetry = herald.telemetry.from_environment("exported")
    assert telemetry is not None
    async with connect(build()) as client:
        await client.call_tool("echo", {"text": "hi"})
    await asyncio.to_thread(telemetry.flush)
    assert [span.service for span in receiver.wait_for("tools/call echo")] == ["gifts-eu"]


def test_metrics_alone_leave_traces_off(monkeypatch: pytest.MonkeyPatch) -> None:
    telemetry = herald.telemetry.from_environment("exported", prometheus=True, environ={})
    try:
        assert telemetry is not None
        with telemetry.tracer.start_as_current_span("anything") as span:
            assert not span.is_recording(), "no trace exporter: spans cost nothing"
    finally:
        herald.telemetry.disable()
        assert telemetry is not None
        telemetry.shutdown()


def test_without_the_extra_an_otel_endpoint_warns_and_the_server_still_starts() -> None:
    """A cluster that sets OTEL_EXPORTER_OTLP_ENDPOINT for every pod must not stop a herald
    without herald[otel]; --metrics, which needs it, says so."""
    script = """
import logging, sys
sys.modules["opentelemetry"] = None  # as if herald[otel] were not installed
logging.basicConfig(level=logging.WARNING)
from herald import Server
import herald.telemetry
app = Server("plain").http_app()
print("started", herald.telemetry.active)
try:
    herald.telemetry.from_environment("plain", prometheus=True, required=True)
except ImportError as missing:
    print("required:", missing)
"""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert "started None" in done.stdout
    assert "herald[otel]" in done.stderr, "one warning, naming the extra"
    assert "required: OpenTelemetry traces and metrics needs herald[otel]" in done.stdout
