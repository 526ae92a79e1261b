"""`GET /metrics` (or the path `HttpConfig.metrics_path` names): the process's metrics in
Prometheus's text format, for a Prometheus server to scrape.

The metrics are herald's OpenTelemetry instruments (`herald.telemetry`), which a
Prometheus reader turns into the exposition format when telemetry was enabled with one
(`--metrics`, or `OTEL_METRICS_EXPORTER=prometheus`). Like the health probes it needs no
token; serve it where only the scraper reaches, or keep the port private.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from herald.extras import needs

__all__ = ["metrics_route"]


def metrics_route(path: str) -> Route:
    with needs("otel", "--metrics"):
        from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

    async def metrics(request: Request) -> Response:
        return Response(
            generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST, headers={"cache-control": "no-store"}
        )

    return Route(path, metrics, methods=["GET"])
