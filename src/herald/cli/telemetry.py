"""`--metrics` and the `OTEL_*` variables, as `herald run`, `giftgenius serve` and `giftgenius
worker` take them: telemetry on when either asks for it (see `herald.telemetry`)."""

from __future__ import annotations

from typing import Annotated

import typer

from herald.cli.checks import UserError
from herald.extras import MissingExtra

#: `--metrics`: serve the metrics in Prometheus's text format on the HTTP server.
MetricsOption = Annotated[
    bool,
    typer.Option(
        "--metrics",
        help="Serve metrics for Prometheus at --metrics-path on the HTTP server (traces and OTLP "
        "export follow the OTEL_* variables).",
        rich_help_panel="Telemetry",
    ),
]
MetricsPathOption = Annotated[
    str, typer.Option(help="Where --metrics serves them.", rich_help_panel="Telemetry")
]


def use_telemetry(service_name: str, metrics: bool, metrics_path: str) -> str | None:
    """Turn telemetry on as `--metrics` and the environment say; the metrics path to serve, if any."""
    if metrics and not metrics_path.startswith("/"):
        raise UserError(f"--metrics-path {metrics_path!r} must start with /", "e.g. --metrics-path /metrics")
    import herald.telemetry

    try:  # the OTEL_* variables alone only warn when the extra is missing; --metrics needs it
        herald.telemetry.from_environment(service_name, prometheus=metrics, required=metrics)
    except MissingExtra as missing:
        raise UserError(str(missing), "--metrics serves what OpenTelemetry measures.") from None
    return metrics_path if metrics else None
