"""An OTLP/HTTP receiver for tests: what servers in other processes export, read back here.

`with OtlpReceiver() as receiver:` listens on a free loopback port; point a process at it
with `receiver.environment()` (`OTEL_EXPORTER_OTLP_ENDPOINT` and a short export delay)
and read `receiver.spans()` and `receiver.metric_names()`. It decodes the protobuf
messages OTLP defines (`opentelemetry-proto`), as a collector would, and answers each
export with success. Needs `herald[otel]`.
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from herald.extras import needs

__all__ = ["OtlpReceiver", "ReceivedSpan"]

#: OTLP span kinds by number (`opentelemetry.proto.trace.v1.Span.SpanKind`).
KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, its ids in hex as W3C trace context writes them."""

    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: tuple[str, ...]
    status_code: int
    links: tuple[str, ...] = field(default=())


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind is not None else None


class OtlpReceiver:
    """A collector's OTLP/HTTP endpoint in a thread (see the module notes)."""

    def __init__(self) -> None:
        with needs("otel", "herald.testing.otlp"):
            from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self._metrics: dict[str, list[Any]] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    traces = trace_service_pb2.ExportTraceServiceRequest()
                    traces.ParseFromString(body)
                    receiver._take_traces(traces)
                    answer = trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    metrics = metrics_service_pb2.ExportMetricsServiceRequest()
                    metrics.ParseFromString(body)
                    receiver._take_metrics(metrics)
                    answer = metrics_service_pb2.ExportMetricsServiceResponse()
                else:
                    self.send_error(404)
                    return
                data = answer.SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, name="otlp-receiver", daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def environment(self, service_name: str | None = None) -> dict[str, str]:
        """The variables that send a process's traces and metrics here, promptly."""
        found = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
        }
        if service_name is not None:
            found["OTEL_SERVICE_NAME"] = service_name
        return found

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    def wait_for(self, name: str, count: int = 1, seconds: float = 30.0) -> list[ReceivedSpan]:
        """The spans called `name` once `count` of them arrived (blocking, at most `seconds`)."""
        deadline = time.monotonic() + seconds
        while True:
            found = [span for span in self.spans() if span.name == name]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                names = sorted({f"{span.service}: {span.name} {span.attributes}" for span in self.spans()})
                raise AssertionError(
                    f"{len(found)} of {count} spans called {name!r} in {seconds} s; got {names}"
                )
            time.sleep(0.05)

    def metric_names(self) -> set[str]:
        with self._lock:
            return set(self._metrics)

    def metric(self, name: str) -> list[Any]:
        """Every export of metric `name` received, oldest first (protobuf `Metric` messages)."""
        with self._lock:
            return list(self._metrics.get(name, ()))

    def _take_traces(self, request: Any) -> None:
        found: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
            service = str(resource.get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            service=service,
                            name=span.name,
                            kind=KINDS.get(span.kind, str(span.kind)),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes={item.key: _value(item.value) for item in span.attributes},
                            events=tuple(event.name for event in span.events),
                            status_code=span.status.code,
                            links=tuple(link.trace_id.hex() for link in span.links),
                        )
                    )
        with self._lock:
            self._spans.extend(found)

    def _take_metrics(self, request: Any) -> None:
        with self._lock:
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        self._metrics.setdefault(metric.name, []).append(metric)
