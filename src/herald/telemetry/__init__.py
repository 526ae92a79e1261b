"""Traces and metrics the OpenTelemetry way, off until asked for.

herald reports what the "Semantic conventions for Model Context Protocol" define: a SERVER
span per request and notification it receives (`tools/call get_weather`), a CLIENT span
per request it sends (elicitation, sampling; and every request of `herald.client`), the
`mcp.server.operation.duration` and `mcp.server.session.duration` histograms, and, where
the conventions stop, a span per job run joined to the trace of the call that started
the job, on whichever process runs it, plus the job, store and HTTP metrics
(`herald.telemetry.names` lists them all).

Off by default, and then free: nothing here imports OpenTelemetry, and every hook in
herald is one read of `active`, which stays None. Two ways on:

- `enable()` in code, with the tracer and meter providers to report to (or the global
  ones an application or `opentelemetry-instrument` set up);
- `from_environment()` (what `herald run`, `giftgenius serve` and `giftgenius worker`
  call): the standard `OTEL_*` variables. An OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`
  or a per-signal one) or an exporter named in `OTEL_TRACES_EXPORTER` /
  `OTEL_METRICS_EXPORTER` turns it on, `OTEL_SDK_DISABLED=true` keeps it off, and the
  SDK reads the rest (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, headers, timeouts).

The packages come with `herald[otel]`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from herald.extras import MissingExtra, needs

if TYPE_CHECKING:
    from herald.telemetry.instruments import Telemetry

__all__ = ["active", "disable", "enable", "from_environment", "requested", "trace_ids"]

logger = logging.getLogger("herald.telemetry")

#: The telemetry herald reports to, or None (off). Hooks read it on every message.
active: Telemetry | None = None

#: What `OTEL_*_EXPORTER` may name that exports nothing.
_NO_EXPORTER = {"", "none"}


def enable(tracer_provider: Any = None, meter_provider: Any = None) -> Telemetry:
    """Report to these providers (the global ones where None) from now on; returns the telemetry."""
    global active
    with needs("otel", "OpenTelemetry traces and metrics"):
        from herald.telemetry.instruments import Telemetry

    active = Telemetry(tracer_provider, meter_provider)
    return active


def disable() -> None:
    """Report nothing from now on (spans already started still end)."""
    global active
    active = None


def requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the `OTEL_*` variables ask for anything to be exported."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    endpoints = (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    )
    if any(environ.get(name) for name in endpoints):
        return True
    exporters = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER")
    return any(environ.get(name, "").strip().lower() not in _NO_EXPORTER for name in exporters)


def from_environment(
    service_name: str,
    *,
    prometheus: bool = False,
    environ: Mapping[str, str] = os.environ,
    required: bool = False,
) -> Telemetry | None:
    """Turn telemetry on as the `OTEL_*` variables say (`service_name` unless they name one),
    with a Prometheus reader besides where `prometheus`; None if neither asks for it.

    Where the application already installed an SDK's providers (its own setup, or
    `opentelemetry-instrument`), herald reports to those instead of building its own.
    Without `herald[otel]` it logs one warning and stays off, so that a cluster that sets
    `OTEL_EXPORTER_OTLP_ENDPOINT` for every pod does not stop a server from starting;
    `required` (what `--metrics` asks) raises `MissingExtra` instead.
    """
    if not prometheus and not requested(environ):
        return None
    try:
        with needs("otel", "OpenTelemetry traces and metrics"):
            from herald.telemetry.exporting import installed_providers, providers_from_environment
    except MissingExtra as missing:
        if required:
            raise
        logger.warning("%s; telemetry stays off", missing)
        return None
    installed = installed_providers()
    if installed is not None and not prometheus:
        return enable(*installed)
    tracer_provider, meter_provider = providers_from_environment(service_name, prometheus, environ)
    return enable(tracer_provider, meter_provider)


def trace_ids() -> tuple[str, str] | None:
    """The current trace and span id in hex, for a log line; None when off or outside a span."""
    if active is None:
        return None
    return active.current_ids()
