"""Tracer and meter providers built from the `OTEL_*` variables, as the SDK defines them.

What herald decides here is only which exporters run: OTLP over HTTP (protobuf), the
console, or none, per signal, from `OTEL_TRACES_EXPORTER` and `OTEL_METRICS_EXPORTER`
(each defaulting to `otlp` once an OTLP endpoint is set, else to none), and a Prometheus
reader for `--metrics`. Everything else (where to send, headers, timeouts, the sampler,
the service's name and resource attributes, the export interval) the SDK and its
exporters read from the same variables themselves.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.trace import NoOpTracerProvider

logger = logging.getLogger("herald.telemetry")

__all__ = ["installed_providers", "providers_from_environment"]

#: The exporters herald runs, per signal.
KNOWN_EXPORTERS = {"TRACES": {"otlp", "console"}, "METRICS": {"otlp", "console", "prometheus"}}


def _exporters(environ: Mapping[str, str], signal: str) -> set[str]:
    """The exporters named for `signal` ("TRACES" or "METRICS"), or `otlp` where an endpoint is set."""
    named = environ.get(f"OTEL_{signal}_EXPORTER")
    if named is None:
        endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
            f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"
        )
        return {"otlp"} if endpoint else set()
    found = {name.strip().lower() for name in named.split(",")} - {"", "none"}
    for unknown in sorted(found - KNOWN_EXPORTERS[signal]):
        logger.warning("OTEL_%s_EXPORTER names %r, which herald does not ship: not used", signal, unknown)
    return found


def installed_providers() -> tuple[Any, Any] | None:
    """The SDK providers the application installed globally, or None where it installed none."""
    from opentelemetry import metrics, trace

    tracer_provider = trace.get_tracer_provider()
    if not isinstance(tracer_provider, TracerProvider):
        return None
    meter_provider = metrics.get_meter_provider()
    return tracer_provider, meter_provider if isinstance(meter_provider, MeterProvider) else None


def _check_protocol(environ: Mapping[str, str], signal: str) -> None:
    protocol = environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL"
    )
    if protocol not in (None, "", "http/protobuf"):
        logger.warning(
            "herald exports OTLP as http/protobuf; OTEL_EXPORTER_OTLP_PROTOCOL=%s is not used", protocol
        )


def _resource(service_name: str, environ: Mapping[str, str]) -> Resource:
    """The SDK's resource from the environment, named `service_name` unless the environment names it."""
    named = "OTEL_SERVICE_NAME" in environ or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    return Resource.create({} if named else {"service.name": service_name})


def providers_from_environment(
    service_name: str, prometheus: bool, environ: Mapping[str, str] = os.environ
) -> tuple[Any, Any]:
    """A tracer provider and a meter provider exporting as `environ` says (see the module notes)."""
    resource = _resource(service_name, environ)
    traces = _exporters(environ, "TRACES")
    tracer_provider: Any = NoOpTracerProvider()
    if traces:
        tracer_provider = TracerProvider(resource=resource)
        if "otlp" in traces:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            _check_protocol(environ, "TRACES")
            tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        if "console" in traces:  # stderr: stdout may be the MCP stream
            tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    readers: list[MetricReader] = []
    metrics = _exporters(environ, "METRICS")
    if "otlp" in metrics:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        _check_protocol(environ, "METRICS")
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    if "console" in metrics:
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    if prometheus or "prometheus" in metrics:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        readers.append(PrometheusMetricReader())
    return tracer_provider, MeterProvider(resource=resource, metric_readers=readers)
