"""The tracer, the meter and every instrument herald reports with, behind small verbs.

The hooks in herald call these verbs (a server span starts, a job event happened, a store
write took so long) and never touch OpenTelemetry themselves, so that this module is the
only one importing it, and only once telemetry is enabled.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from herald.telemetry import names

__all__ = ["Operation", "Telemetry"]

#: Where a request carries its trace context (SEP-414): `params._meta`.
META = "_meta"
#: The outcome of a job's run that stopped before the job ended.
UNFINISHED = "unfinished"
#: The codes JSON-RPC reserves (MCP's among them); any other is `_OTHER` in a metric.
JSON_RPC_CODES = (-32768, -32000)
#: How a job can end (`herald.job.outcome` of `herald.jobs.ended`).
ENDINGS = ("completed", "failed", "cancelled")


class Counts(Protocol):
    """What a job runner tells the gauges: jobs running here, and launched but waiting for a slot."""

    @property
    def running(self) -> int: ...

    @property
    def queued(self) -> int: ...

    def tools(self) -> list[str]: ...


@dataclass(slots=True)
class Operation:
    """An MCP operation in flight: its span, when it began, and what its metric is recorded under."""

    span: Span
    started: float
    #: The low-cardinality attributes the duration histogram is recorded with.
    measured: dict[str, Any]
    token: object | None = None


@dataclass(slots=True)
class _JobRun:
    span: Span
    tool: str
    ended: bool = False
    token: object | None = field(default=None)


class Telemetry:
    """herald's instruments, reporting to one tracer provider and one meter provider."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            release = version("herald")
        except PackageNotFoundError:  # run from a source tree
            release = "unknown"
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer = trace.get_tracer("herald", release, tracer_provider=tracer_provider)
        meter = metrics.get_meter("herald", release, meter_provider=meter_provider)
        buckets = list(names.DURATION_BUCKETS)
        self.server_duration = meter.create_histogram(
            names.SERVER_OPERATION_DURATION,
            unit="s",
            description="MCP request or notification duration as observed on the receiver, from "
            "the time it was received until the result or ack is sent.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.session_duration = meter.create_histogram(
            names.SERVER_SESSION_DURATION,
            unit="s",
            description="The duration of the MCP session as observed on the MCP server.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.client_duration = meter.create_histogram(
            names.CLIENT_OPERATION_DURATION,
            unit="s",
            description="The duration of the MCP request or notification as observed on the sender, "
            "from the time it was sent until the response or ack is received.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.jobs_started = meter.create_counter(
            names.JOBS_STARTED, unit="{job}", description="Jobs that began running in this process."
        )
        self.jobs_ended = meter.create_counter(
            names.JOBS_ENDED, unit="{job}", description="Jobs run in this process that ended, by outcome."
        )
        self.queue_duration = meter.create_histogram(
            names.JOB_QUEUE_DURATION,
            unit="s",
            description="From a job's creation until a worker began running it.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.job_events = meter.create_counter(
            names.JOB_EVENTS, unit="{event}", description="Job events this process wrote to the store."
        )
        self.store_duration = meter.create_histogram(
            names.STORE_WRITE_DURATION,
            unit="s",
            description="How long one write of job events to the store took.",
            explicit_bucket_boundaries_advisory=list(names.STORE_BUCKETS),
        )
        self.sessions_open = meter.create_up_down_counter(
            names.HTTP_SESSIONS_OPEN, unit="{session}", description="MCP sessions held by this HTTP server."
        )
        self.streams_open = meter.create_up_down_counter(
            names.HTTP_STREAMS_OPEN, unit="{stream}", description="SSE streams open on this HTTP server."
        )
        self.backpressure = meter.create_counter(
            names.HTTP_BACKPRESSURE,
            unit="{message}",
            description="What back-pressure did to a slow reader: a message dropped, or its stream cut.",
        )
        self._runners: weakref.WeakSet[Any] = weakref.WeakSet()
        meter.create_observable_gauge(
            names.JOBS_RUNNING,
            callbacks=[self._observe_running],
            unit="{job}",
            description="Jobs running in this process.",
        )
        meter.create_observable_gauge(
            names.JOBS_QUEUED,
            callbacks=[self._observe_queued],
            unit="{job}",
            description="Jobs accepted by this process and waiting for a free slot.",
        )
        self._jobs: dict[str, _JobRun] = {}

    def flush(self, timeout_seconds: float = 5.0) -> None:
        """Export what the providers hold now (blocking: call it in a thread).

        A server flushes as it stops: a process ended by a signal it re-raises (uvicorn
        does, after a graceful shutdown) runs no exit handler, and the spans of its last
        seconds, the hand-back of its jobs among them, would be lost.
        """
        tracer_provider = self.tracer_provider or trace.get_tracer_provider()
        meter_provider = self.meter_provider or metrics.get_meter_provider()
        for provider in (tracer_provider, meter_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                flush(int(timeout_seconds * 1000))

    def shutdown(self) -> None:
        """Flush and stop the providers (those of the SDK; the API's own have nothing to stop)."""
        for provider in (self.tracer_provider, self.meter_provider):
            stop = getattr(provider, "shutdown", None)
            if stop is not None:
                stop()

    # -- context -------------------------------------------------------------------------------

    def current_ids(self) -> tuple[str, str] | None:
        found = trace.get_current_span().get_span_context()
        if not found.is_valid:
            return None
        return trace.format_trace_id(found.trace_id), trace.format_span_id(found.span_id)

    def carrier(self) -> dict[str, str]:
        """The current trace context as `_meta` (or a job record) carries it: `traceparent`, …"""
        found: dict[str, str] = {}
        propagate.inject(found)
        return found

    @staticmethod
    def _extracted(carrier: Mapping[str, Any] | None) -> otel_context.Context | None:
        """The context `carrier` holds, or None where it holds no valid one."""
        if not carrier:
            return None
        strings = {key: value for key, value in carrier.items() if isinstance(value, str)}
        try:
            found = propagate.extract(strings)
        except (TypeError, ValueError):
            return None
        return found if trace.get_current_span(found).get_span_context().is_valid else None

    # -- MCP operations ----------------------------------------------------------------------------

    def start_server(
        self,
        name: str,
        attributes: dict[str, Any],
        measured: dict[str, Any],
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> Operation:
        """A SERVER span for a message received, its parent the context in `params._meta`, else
        the HTTP request's headers; with both, the HTTP one is linked (the conventions)."""
        meta = params.get(META) if params is not None else None
        parent = self._extracted(meta) if isinstance(meta, Mapping) else None
        ambient = self._extracted(headers)
        links: list[Link] = []
        if parent is None:
            parent = ambient
        elif ambient is not None:
            links.append(Link(trace.get_current_span(ambient).get_span_context()))
        span = self.tracer.start_span(
            name, context=parent, kind=SpanKind.SERVER, attributes=attributes, links=links
        )
        return Operation(span, time.perf_counter(), measured)

    def enter(self, operation: Operation) -> None:
        """Make the operation's span current in this task (what it logs, calls and starts joins it)."""
        operation.token = otel_context.attach(trace.set_span_in_context(operation.span))

    def end_server(
        self, operation: Operation, error_type: str | None = None, code: int | None = None, message: str = ""
    ) -> None:
        """End the span and record its duration; `error_type` says how it failed, if it did."""
        self._end(operation, error_type, code, message, self.server_duration)

    def _end(
        self, operation: Operation, error_type: str | None, code: int | None, message: str, histogram: Any
    ) -> None:
        span, measured = operation.span, operation.measured
        if error_type is not None:
            extra = {names.ERROR_TYPE: error_type}
            if code is not None:
                extra[names.STATUS_CODE] = str(code)
            span.set_attributes(extra)
            span.set_status(Status(StatusCode.ERROR, message or error_type))
            if code is not None and not JSON_RPC_CODES[0] <= code <= JSON_RPC_CODES[1]:
                # A code the peer made up: the span keeps it, the metric's series are bounded.
                extra = {names.ERROR_TYPE: names.OTHER, names.STATUS_CODE: names.OTHER}
            measured = {**measured, **extra}
        span.end()
        if operation.token is not None:
            otel_context.detach(operation.token)  # type: ignore[arg-type]
        histogram.record(time.perf_counter() - operation.started, measured)

    def session_ended(self, seconds: float, attributes: dict[str, Any]) -> None:
        self.session_duration.record(seconds, attributes)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        attributes: dict[str, Any],
        send: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
        refusal: Callable[[BaseException], tuple[int, str] | None],
    ) -> dict[str, Any]:
        """`send(params)` as a request in a CLIENT span, with the span's context in `_meta` (of
        a copy: the caller's dict is left alone); `refusal` reads the peer's error code and
        message out of what `send` raises for an error response (None for any other failure)."""
        span = self.tracer.start_span(
            names.span_name(method, attributes), kind=SpanKind.CLIENT, attributes=attributes
        )
        operation = Operation(span, time.perf_counter(), _low_cardinality(attributes))
        operation.token = otel_context.attach(trace.set_span_in_context(span))
        sent = dict(params or {})
        meta = dict(sent.get(META) or {})
        propagate.inject(meta)
        sent[META] = meta
        try:
            result = await send(sent)
        except BaseException as failed:
            refused = refusal(failed)
            if refused is not None:
                self._end(operation, str(refused[0]), refused[0], refused[1], self.client_duration)
            else:
                self._end(operation, type(failed).__qualname__, None, str(failed), self.client_duration)
            raise
        failed_tool = method == "tools/call" and result.get("isError") is True
        self._end(operation, names.TOOL_ERROR if failed_tool else None, None, "", self.client_duration)
        return result

    # -- jobs ----------------------------------------------------------------------------------------

    def job_run_started(
        self,
        job_id: str,
        tool: str,
        carrier: Mapping[str, str] | None,
        *,
        resumed: bool,
        queued_seconds: float | None,
    ) -> None:
        """A job begins (or goes on) running here: its span, in the trace of the call that started it."""
        attributes: dict[str, Any] = {names.JOB_ID: job_id, names.TOOL_NAME: tool, names.JOB_RESUMED: resumed}
        # No context kept: a trace of its own, never whatever span this task inherited.
        parent = self._extracted(carrier)
        span = self.tracer.start_span(
            f"job {tool}",
            context=parent if parent is not None else otel_context.Context(),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        )
        run = _JobRun(span, tool)
        run.token = otel_context.attach(trace.set_span_in_context(span))
        self._jobs[job_id] = run
        self.jobs_started.add(1, {names.TOOL_NAME: tool, names.JOB_RESUMED: resumed})
        if queued_seconds is not None:
            self.queue_duration.record(max(queued_seconds, 0.0), {names.TOOL_NAME: tool})

    def job_event(self, job_id: str, kind: str, payload: Mapping[str, Any], terminal: bool) -> None:
        """A job that runs here wrote an event: a span event; its ending ends the span."""
        run = self._jobs.get(job_id)
        if run is None:
            return
        run.span.add_event(f"job.{kind}", dict(_event_attributes(payload)))
        if terminal and not run.ended:
            run.ended = True
            self.jobs_ended.add(1, {names.TOOL_NAME: run.tool, names.JOB_OUTCOME: kind})
            run.span.set_attribute(names.JOB_OUTCOME, kind)
            if kind == "failed":
                error = payload.get("error")
                code = error.get("code") if isinstance(error, Mapping) else None
                run.span.set_attribute(names.ERROR_TYPE, str(code or "failed"))
                message = error.get("message") if isinstance(error, Mapping) else None
                run.span.set_status(Status(StatusCode.ERROR, str(message or "the job failed")))

    def job_run_ended(self, job_id: str) -> None:
        """The run here is over: its span ends. A run that stopped with the job unfinished
        (handed back at shutdown, taken over) says so; the job goes on in another span."""
        run = self._jobs.pop(job_id, None)
        if run is None:
            return
        if not run.ended:
            run.span.set_attribute(names.JOB_OUTCOME, UNFINISHED)
        run.span.end()
        if run.token is not None:
            otel_context.detach(run.token)  # type: ignore[arg-type]

    def store_written(self, seconds: float, events: int) -> None:
        self.store_duration.record(seconds)
        self.job_events.add(events)

    def watch_runner(self, runner: Counts) -> None:
        """Report `runner`'s running and waiting jobs in the gauges while it lives, and start
        the job counters of its tools at zero: a series that appears only with its first job
        would hide that job from `increase()`, and from an alert on the first failure."""
        self._runners.add(runner)
        for tool in runner.tools():
            self.jobs_started.add(0, {names.TOOL_NAME: tool, names.JOB_RESUMED: False})
            for outcome in ENDINGS:
                self.jobs_ended.add(0, {names.TOOL_NAME: tool, names.JOB_OUTCOME: outcome})

    def _observe_running(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(sum(runner.running for runner in self._runners))]

    def _observe_queued(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(sum(runner.queued for runner in self._runners))]

    # -- HTTP ------------------------------------------------------------------------------------------

    def sessions_changed(self, by: int) -> None:
        self.sessions_open.add(by)

    def streams_changed(self, by: int) -> None:
        self.streams_open.add(by)

    def pressed(self, action: str, count: int = 1) -> None:
        """Back-pressure on a slow reader: a stream "cut", or `count` messages "dropped" with it."""
        if count:
            self.backpressure.add(count, {names.BACKPRESSURE_ACTION: action})


#: Span attributes that would make a metric's series unbounded (one per request, session, URI).
_HIGH_CARDINALITY = frozenset(
    {names.REQUEST_ID, names.SESSION_ID, names.RESOURCE_URI, names.CLIENT_ADDRESS, "server.address"}
)


def _low_cardinality(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in attributes.items() if key not in _HIGH_CARDINALITY}


def _event_attributes(payload: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """A job event's payload as span event attributes: its scalars, by their own names."""
    for key, value in payload.items():
        if isinstance(value, str | bool | int | float):
            yield f"herald.job.{key}", value
        elif isinstance(value, Mapping):
            for inner, scalar in value.items():
                if isinstance(scalar, str | bool | int | float):
                    yield f"herald.job.{key}.{inner}", scalar
