"""Log lines for people (text, the default on a terminal) or for machines (one JSON object
a line, `--log-format json`), with the request, session and job they are about.

A JSON line holds `time` (UTC, ISO 8601), `level`, `logger` and `message`, then
`request_id` and `session` when the line was logged while a request was served, `job_id`
while a job ran, `trace_id` and `span_id` inside a span (with `herald.telemetry` on), and
`error` (the exception's type and text) with `traceback` when there was one. Collectors
(Loki, Elasticsearch, CloudWatch) read the fields as they are.

The request and job are context variables set where each is served. They are set only
once `configure` asked for JSON (`wanted`), so a text-logging server pays one flag check
per request for this, and nothing else.
"""

from __future__ import annotations

import datetime
import logging
import sys
import traceback
from contextvars import ContextVar
from typing import Any, Final, Literal

import orjson

import herald.telemetry

__all__ = ["JOB", "REQUEST", "JsonFormatter", "LogFormat", "configure", "wanted"]

LogFormat = Literal["text", "json"]
TEXT_FORMAT: Final = "%(levelname)s %(name)s: %(message)s"

#: The request a line is logged under: its JSON-RPC id and its session (or None).
REQUEST: ContextVar[tuple[Any, str | None] | None] = ContextVar("herald_request", default=None)
#: The job a line is logged under.
JOB: ContextVar[str | None] = ContextVar("herald_job", default=None)

#: Whether a JSON log wants `REQUEST` and `JOB` set (see the module notes).
wanted = False


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = REQUEST.get()
        if request is not None:
            line["request_id"], session = request
            if session:
                line["session"] = session
        job = JOB.get()
        if job is not None:
            line["job_id"] = job
        traced = herald.telemetry.trace_ids()
        if traced is not None:
            line["trace_id"], line["span_id"] = traced
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line["error"] = f"{type(error).__name__}: {error}"
            line["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return orjson.dumps(line, default=str).decode()


def configure(log_format: LogFormat = "text", level: int = logging.WARNING) -> None:
    """Send the process's log to stderr in `log_format`, from `level` up."""
    global wanted
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    wanted = log_format == "json"
