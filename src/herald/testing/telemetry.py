"""Telemetry kept in memory, for tests that assert what a server reports.

`with recorded() as seen:` turns `herald.telemetry` on with the SDK's in-memory span
exporter and metric reader, and off again after the block; `seen.spans()` are the spans
ended so far, `seen.points(name)` the data points of one metric. Needs `herald[otel]`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import herald.telemetry
from herald.extras import needs

__all__ = ["Recorded", "recorded"]


@dataclass
class Recorded:
    exporter: Any
    reader: Any
    tracer_provider: Any

    def spans(self, name: str | None = None) -> list[Any]:
        """The spans ended so far (`ReadableSpan`), oldest first; only those called `name`, if given."""
        found = list(self.exporter.get_finished_spans())
        return [span for span in found if name is None or span.name == name]

    def span(self, name: str) -> Any:
        """The one span called `name` (an assertion error if there is not exactly one)."""
        found = self.spans(name)
        assert len(found) == 1, f"{len(found)} spans called {name!r}: {[span.name for span in self.spans()]}"
        return found[0]

    def points(self, metric: str) -> list[Any]:
        """The data points of `metric` as collected now (empty if nothing was recorded)."""
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for found in scope.metrics
            if found.name == metric
            for point in found.data.data_points
        ]

    def total(self, metric: str, attributes: Mapping[str, Any] | None = None) -> float:
        """The sum (of a counter's values, a histogram's counts, a gauge's values) over the
        points whose attributes include `attributes`."""
        total = 0.0
        for point in self.points(metric):
            if all(point.attributes.get(key) == value for key, value in (attributes or {}).items()):
                total += point.count if hasattr(point, "count") else point.value
        return total


@contextmanager
def recorded() -> Iterator[Recorded]:
    """Telemetry on, into memory, for the block (see the module notes)."""
    with needs("otel", "herald.testing.telemetry"):
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    herald.telemetry.enable(tracer_provider, meter_provider)
    try:
        yield Recorded(exporter, reader, tracer_provider)
    finally:
        herald.telemetry.disable()
        tracer_provider.shutdown()
        meter_provider.shutdown()
