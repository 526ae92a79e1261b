"""Long-running work as jobs: `@server.job` turns an async function into a tool that
answers at once with a job id and runs the function in the background.

The function gets a `JobContext` to report progress, log, save results and notice
cancellation. Every change goes through `JobService`, so the job's events are stored
before anyone sees them. Alongside the job tools the server offers `get_job_status`
(a cursor over a job's events, for clients that cannot hold a stream, such as widgets),
`cancel_job`, the job results as resources and the JSON Schemas of the event types.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import orjson
from pydantic import Field

from herald.content import ToolResult, text
from herald.jobs.events import ERROR_SCHEMA, all_schemas
from herald.jobs.machine import IllegalTransition, JobStatus
from herald.jobs.record import JobRecord
from herald.jobs.service import STORE_ERROR, JobService, UnknownJob
from herald.protocol.cursor import decode_cursor, encode_cursor
from herald.protocol.errors import InvalidParams, ProtocolError
from herald.server.context import Context
from herald.server.registry import ToolSpec
from herald.server.signature import read_signature
from herald.server.widgets import ToolUI, app_only, merge_meta
from herald.stores.errors import StoreError

if TYPE_CHECKING:
    from herald.server.app import Server

logger = logging.getLogger("herald.jobs")

RESULT_TEMPLATE = "herald://jobs/{job_id}/{name}"
SCHEMAS_URI = "herald://schemas/job-events"
#: The extension a server with jobs declares, and the `subscriptions/listen` filter key
#: that selects job events: `{"io.herald/jobEvents": true}` for every job, or
#: `{"io.herald/jobEvents": {"jobIds": [...]}}` for some.
JOB_EVENTS_EXTENSION = "io.herald/job-events"
JOB_EVENTS_FILTER = "io.herald/jobEvents"
JOB_EVENTS_SETTINGS: dict[str, Any] = {
    "notifications": [
        f"notifications/job/{kind}"
        for kind in ("created", "started", "progress", "completed", "failed", "cancelled")
    ],
    "schemas": "herald://schemas/job-events",
    "listenFilter": JOB_EVENTS_FILTER,
    "pollTool": "get_job_status",
}
#: How soon a polling client should ask again while a job runs.
POLL_AFTER_MS = 500
#: The error message of a job that was running when its server stopped on purpose.
SHUTTING_DOWN = "Interrupted: server shutting down."
#: The error of a job stopped because the store refused to save its progress or result.
STORE_FAILED = "The job was stopped: the server could not save its progress."
STORE_FAILED_HINT = "The server's storage refused a write (a full disk, perhaps); start the job again."

JOB_STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "jobId": {"type": "string"},
        "status": {"enum": ["pending", "running", "completed", "failed", "cancelled"]},
        "percentage": {"type": "number"},
        "stage": {"type": ["string", "null"]},
        "events": {"type": "array", "items": {"type": "object"}},
        "nextCursor": {"type": "string"},
        "pollAfterMs": {"type": ["integer", "null"]},
        "resultResourceId": {"type": "string"},
        "error": {"type": "object"},
    },
    "required": ["jobId", "status", "percentage", "stage", "events", "nextCursor", "pollAfterMs"],
}

#: The `outputSchema` of every `@server.job` tool. Starting the job answers
#: `{jobId, status: "pending"}`; when the call ran as a task, `tasks/result` answers with the
#: same tool's result for the ended job (`completed` with its result and summary, or
#: `failed`/`cancelled` with an error), and clients check both against this one schema.
JOB_TOOL_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "jobId": {"type": "string", "minLength": 1},
        "status": {"enum": [status.value for status in JobStatus]},
        "resultResourceId": {"type": "string", "minLength": 1},
        "summary": {"type": "string"},
        "error": ERROR_SCHEMA,
    },
    "required": ["jobId", "status"],
    "additionalProperties": False,
}


def default_max_running_jobs() -> int:
    """How many jobs run at once unless the server says otherwise: twice the cores (4 on 2).

    Every job runs on the server's one event loop, so more jobs at once do not finish
    sooner: they make each other, and every request, wait behind more job steps (1,000
    jobs started together held pings up for seconds). A few per core is enough to keep
    the cores busy with jobs that wait on I/O or hand work to threads; the rest wait,
    `pending`, in creation order.
    """
    return 2 * (os.cpu_count() or 1)


class ShuttingDown(ProtocolError):
    """A job arrived while the server was stopping: it is not started (it ends `interrupted`)."""

    code = -32603
    http_status = 503

    def __init__(self) -> None:
        super().__init__(
            "The server is shutting down and starts no new jobs; start the job again once it is back."
        )


class JobFailure(Exception):
    """Raised by a job function to fail its job with a code, a message and a hint."""

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


class JobContext:
    """What a running job function sees of its job."""

    def __init__(self, service: JobService, job: JobRecord, log: Callable[[str, Any], None]) -> None:
        self.service = service
        self.job_id = job.job_id
        self.arguments = job.arguments
        #: Set when the job is asked to stop; the function is also cancelled at its next await.
        self.cancel_requested = asyncio.Event()
        self._log = log
        self.result_uri: str | None = None
        self.summary: str | None = None
        #: The first write of this job the store refused; from then on the job is doomed.
        self.store_failure: StoreError | None = None
        #: Set once the function has stopped and the runner is recording how the job ended.
        self.ending = False

    async def report_progress(self, percentage: float, stage: str, eta_seconds: float | None = None) -> None:
        """Record progress. It must not decrease; `IllegalTransition` says so if it does.

        If the store refuses the write, `StoreError` is raised here and again at every later
        write: a job whose progress cannot be saved is stopped, not left to run unseen.
        """
        with self._watching_the_store():
            await self.service.progress(self.job_id, percentage, stage, eta_seconds)

    def log(self, level: str, data: Any) -> None:
        """A log line about this job, for the client that started it (and the server log)."""
        self._log(level, data)

    async def save_result(self, name: str, data: bytes | str, mime_type: str) -> str:
        """Store a result document of this job; returns its resource URI."""
        body = data.encode() if isinstance(data, str) else data
        with self._watching_the_store():
            await self.service.store.put_result(self.job_id, name, mime_type, body)
        return RESULT_TEMPLATE.format(job_id=self.job_id, name=name)

    def complete(self, result_uri: str, summary: str | None = None) -> None:
        """Say how the job ended; it is recorded when the function returns."""
        self.result_uri, self.summary = result_uri, summary

    async def checkpoint(self) -> None:
        """A point where cancellation may stop the job (long CPU-bound loops call it)."""
        await asyncio.sleep(0)

    @contextlib.contextmanager
    def _watching_the_store(self) -> Iterator[None]:
        """Remember the store's first refusal, and refuse every write after it."""
        if self.store_failure is not None:
            raise StoreError("an earlier write of this job failed") from self.store_failure
        try:
            yield
        except StoreError as failure:
            self.store_failure = failure
            raise


Ending = Callable[[], Awaitable[object]]


@dataclass(slots=True)
class _Admission:
    """A launched job waiting for a free slot: what its task will run."""

    job_id: str
    function: Callable[..., Any]
    values: dict[str, Any]
    context: JobContext


class JobRunner:
    """Runs job functions as tasks and records how each ended.

    Theory of operation: a job's task first runs the function (`_work`), which decides how
    the job ends, then records that ending (`_settle`). The ending is recorded whatever
    happens to the store: a write the store refuses (a full disk) is tried again, with
    delays that double from `retry_delay` up to `max_retry_delay`, for as long as the
    server runs, because a live server must never leave a job `running` that nothing
    runs. Only shutdown ends the retries, after one last try; the next start then fails
    the job as `interrupted`.

    Admission: `launch` accepts every job at once, but at most `max_running` have a task;
    the others stay `pending` in the store and wait here, in the order they were launched
    (which is the order the store created them: a job tool launches right after `create`
    returns), until a running job's task ends. A queued job cancelled is taken off the
    queue; at shutdown the queued jobs are failed `interrupted`, as the running ones are.
    """

    def __init__(
        self,
        service: JobService,
        *,
        max_running: int | None = None,
        retry_delay: float = 0.05,
        max_retry_delay: float = 2.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.service = service
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self._sleep = sleep
        self._max_running = _checked_limit(default_max_running_jobs() if max_running is None else max_running)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._contexts: dict[str, JobContext] = {}
        #: Launched, not yet running, oldest first (dicts keep insertion order).
        self._queue: dict[str, _Admission] = {}
        self._closing = False

    @property
    def max_running(self) -> int:
        """How many jobs may run at once; raising it starts waiting jobs at once."""
        return self._max_running

    @max_running.setter
    def max_running(self, limit: int) -> None:
        self._max_running = _checked_limit(limit)
        self._admit()

    @property
    def accepting(self) -> bool:
        """False once shutdown has begun: `launch` refuses new jobs."""
        return not self._closing

    def launch(
        self,
        job: JobRecord,
        function: Callable[..., Any],
        arguments: dict[str, Any],
        context_name: str | None,
        log: Callable[[str, Any], None],
    ) -> None:
        """Accept a created (`pending`) job: run it now if a slot is free, else when one frees.

        Raises `ShuttingDown` once `aclose` has begun: nothing would run the job, and
        `aclose` may already have failed the jobs it knew of. The caller fails the job
        (`launch_job` does).
        """
        if self._closing:
            raise ShuttingDown()
        context = JobContext(self.service, job, log)
        values = dict(arguments)
        if context_name is not None:
            values[context_name] = context
        self._contexts[job.job_id] = context
        self._queue[job.job_id] = _Admission(job.job_id, function, values, context)
        self._admit()

    def _admit(self) -> None:
        """Start waiting jobs, oldest first, while slots are free."""
        while self._queue and len(self._tasks) < self._max_running and not self._closing:
            admitted = self._queue.pop(next(iter(self._queue)))
            self._start(admitted)

    def _start(self, admitted: _Admission) -> None:
        job_id = admitted.job_id
        # Owned here: `cancel` and `aclose` cancel it, and `aclose` awaits it.
        task = asyncio.get_running_loop().create_task(
            self._run(job_id, admitted.function, admitted.values, admitted.context)
        )
        self._tasks[job_id] = task

        def forget(_: object) -> None:
            self._tasks.pop(job_id, None)
            self._contexts.pop(job_id, None)
            self._admit()  # its slot is free

        task.add_done_callback(forget)

    async def _run(
        self, job_id: str, function: Callable[..., Any], values: dict[str, Any], context: JobContext
    ) -> None:
        ending = await self._work(job_id, function, values, context)
        context.ending = True
        if ending is not None:
            await self._settle(job_id, ending)

    async def _work(
        self, job_id: str, function: Callable[..., Any], values: dict[str, Any], context: JobContext
    ) -> Ending | None:
        """Run the function; the ending still to record, or None once completion is recorded."""
        service = self.service
        try:
            try:
                await service.start(job_id)
            except IllegalTransition:  # it ended (cancelled, say) while it waited for a slot
                logger.info("job %s ended before it could start", job_id)
                return None
            outcome = await function(**values)
            if context.store_failure is not None:  # the function caught it and went on
                raise context.store_failure
            if context.result_uri is None:
                uri = await context.save_result("result.json", orjson.dumps(outcome), "application/json")
                context.complete(uri, outcome.get("summary") if isinstance(outcome, dict) else None)
            assert context.result_uri is not None
            await service.complete(job_id, context.result_uri, context.summary)
            return None
        except asyncio.CancelledError:
            # Only `cancel` (cancel_job, tasks/cancel) sets `cancel_requested`; any other
            # cancellation is the server going away (`aclose`, or the loop shutting down).
            if context.cancel_requested.is_set():
                return lambda: service.cancel(job_id, "cancelled on request")
            return lambda: service.interrupt(job_id, SHUTTING_DOWN)
        except Exception as exc:
            failure = exc if isinstance(exc, StoreError) else context.store_failure
            if failure is not None:  # whatever the function made of it, the store failed first
                logger.warning("job %s stopped: the store refused a write (%s)", job_id, failure)
                return lambda: service.fail(job_id, STORE_ERROR, STORE_FAILED, STORE_FAILED_HINT)
            if isinstance(exc, JobFailure):
                code, message, hint = exc.code, exc.message, exc.hint
                return lambda: service.fail(job_id, code, message, hint)
            logger.exception("job %s failed", job_id)
            unexpected = f"The job failed: {type(exc).__name__}"
            return lambda: service.fail(job_id, "internal", unexpected, None)

    async def _settle(self, job_id: str, ending: Ending) -> None:
        """Record `ending`, trying again while the store refuses, until it is recorded or we stop."""
        delay = self.retry_delay
        last_try = False
        while True:
            try:
                await ending()
                return
            except IllegalTransition:
                logger.info("job %s: ending not recorded: it had already ended", job_id)
                return
            except StoreError as refused:
                if last_try or self._closing:
                    logger.error(
                        "job %s: its ending was not recorded before shutdown (%s); "
                        "the next start fails it as interrupted",
                        job_id,
                        refused,
                    )
                    return
                logger.warning("job %s: ending not recorded (%s); next try in %.2f s", job_id, refused, delay)
            except asyncio.CancelledError:
                if last_try:
                    raise
                last_try = True  # the server is going away mid-write: one more try
                continue
            try:
                await self._sleep(delay)
            except asyncio.CancelledError:
                last_try = True  # `cancel` leaves ending jobs alone, so this is shutdown
            delay = min(delay * 2, self.max_retry_delay)

    def cancel(self, job_id: str) -> bool:
        """Stop a running job: its context's `cancel_requested` is set and its task cancelled.

        True when the runner records the ending. A job whose function has already stopped
        is only recording its ending; a cancel request changes nothing then, so its task is
        left alone. A job still waiting for a slot is taken off the queue and False is
        returned, as for a job the runner does not know: the caller records the
        cancellation (`JobService.cancel`), and nothing will start the job.
        """
        task = self._tasks.get(job_id)
        if task is None:
            if self._queue.pop(job_id, None) is not None:
                self._contexts.pop(job_id).cancel_requested.set()
            return False
        context = self._contexts[job_id]
        context.cancel_requested.set()
        if not context.ending:
            task.cancel()
        return True

    async def wait_ended(self, job_id: str) -> None:
        """Wait until the job's task has stopped (its ending recorded, or given up at shutdown).

        A job still waiting for a slot has no task yet: this returns at once for it.
        """
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.shield(task)

    @property
    def running(self) -> int:
        """Jobs with a task: running, or recording how they ended."""
        return len(self._tasks)

    @property
    def queued(self) -> int:
        """Jobs launched and still `pending`, waiting for a slot."""
        return len(self._queue)

    async def aclose(self) -> None:
        """Stop every running job, fail every waiting one, and wait until each has ended.

        A job stopped here ends `failed` with code `interrupted` ("server shutting down"),
        not `cancelled`: nobody asked for it to stop, and it can be started again. That
        holds for the jobs still waiting for a slot too; from here on `launch` refuses.
        """
        self._closing = True
        waiting = list(self._queue)
        self._queue.clear()
        for job_id in waiting:
            self._contexts.pop(job_id, None)
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for job_id in waiting:
            await self._settle(job_id, functools.partial(self.service.interrupt, job_id, SHUTTING_DOWN))


def _checked_limit(limit: int) -> int:
    if limit < 1:
        raise ValueError(f"at least one job must be able to run at a time, not {limit}")
    return limit


async def launch_job(
    server: Server,
    job: JobRecord,
    function: Callable[..., Any],
    arguments: dict[str, Any],
    context_name: str | None,
    log: Callable[[str, Any], None],
) -> None:
    """Hand a created job to the runner; if the server is shutting down, fail it and refuse.

    The job was already created `pending`, so it is failed `interrupted` before
    `ShuttingDown` reaches the caller: a job nothing will run must not stay pending. If
    the store has closed too, the next start fails it the same way.
    """
    try:
        server.job_runner().launch(job, function, arguments, context_name, log)
    except ShuttingDown:
        with contextlib.suppress(IllegalTransition, StoreError):
            await server.job_service().interrupt(job.job_id, SHUTTING_DOWN)
        raise


async def _quietly(change: Any) -> None:
    """Record an ending; if the job already ended another way, that ending stands."""
    try:
        await change
    except IllegalTransition:
        logger.info("job ending not recorded: it had already ended")


def job_tool(
    server: Server,
    function: Callable[..., Any],
    *,
    name: str,
    description: str,
    title: str | None,
    annotations: dict[str, Any] | None,
    meta: dict[str, Any] | None,
) -> ToolSpec:
    """The tool that starts a job of `function`."""
    signature = read_signature(function, JobContext)
    job_context_name = signature.context_parameter

    async def start(**values: Any) -> ToolResult:
        context: Context = values.pop("__request_context__")
        if not server.job_runner().accepting:
            raise ShuttingDown()
        service = server.job_service()
        job = await service.create(name, values, owner=context.owner, progress_token=context.progress_token)
        await launch_job(server, job, function, values, job_context_name, context.job_log(job.job_id))
        return ToolResult(
            [text(f"Started job {job.job_id}. Follow it with get_job_status(jobId={job.job_id!r}).")],
            structured={"jobId": job.job_id, "status": "pending"},
        )

    start_signature = type(signature)(
        signature.schema, signature.arguments_model, "__request_context__", signature.parameter_names
    )
    return ToolSpec(
        name=name,
        function=start,
        signature=start_signature,
        description=description,
        input_schema=signature.schema,
        output_schema=JOB_TOOL_OUTPUT_SCHEMA,
        title=title,
        annotations=annotations,
        meta=meta,
        task_support="optional",
        starts_job=True,
    )


async def known_job(service: JobService, job_id: str) -> JobRecord:
    """The job a tool was asked about; an unknown id is the caller's mistake (-32602)."""
    try:
        return await service.get(job_id)
    except UnknownJob:
        raise InvalidParams(f"Unknown job: {job_id!r}") from None


def install_job_support(server: Server) -> None:
    """The tools and resources every server with jobs offers."""

    @server.tool(
        name="get_job_status",
        output_schema=JOB_STATUS_SCHEMA,
        annotations={"readOnlyHint": True, "idempotentHint": True},
    )
    async def get_job_status(
        job_id: Annotated[str, Field(alias="jobId", description="The id a job tool returned")],
        cursor: Annotated[str | None, Field(description="nextCursor of the previous answer")] = None,
    ) -> ToolResult:
        """The status of a job and its events since `cursor` (all of them without one), oldest first."""
        service = server.job_service()
        job = await known_job(service, job_id)
        listing = f"job-events:{job_id}"
        after = decode_cursor(listing, cursor) if cursor else 0
        events = await service.store.events_after(job_id, after)
        last = events[-1].sequence if events else after
        status: dict[str, Any] = {
            "jobId": job_id,
            "status": job.status,
            "percentage": job.percentage,
            "stage": job.stage,
            "events": [event.to_params() for event in events],
            "nextCursor": encode_cursor(listing, last),
            "pollAfterMs": None if job.terminal else POLL_AFTER_MS,
        }
        if job.result_uri:
            status["resultResourceId"] = job.result_uri
        if job.error:
            status["error"] = job.error
        summary = (
            f"Job {job_id} is {job.status} ({job.percentage:.0f}%{', ' + job.stage if job.stage else ''})."
        )
        return ToolResult([text(summary)], structured=status)

    @server.tool(name="cancel_job", annotations={"destructiveHint": False, "idempotentHint": True})
    async def cancel_job(
        job_id: Annotated[str, Field(alias="jobId", description="The job to cancel")],
    ) -> str:
        """Cancel a pending or running job. Cancelling a finished job changes nothing."""
        service = server.job_service()
        job = await known_job(service, job_id)
        if job.terminal:
            return f"Job {job_id} has already ended: {job.status}."
        if not server.job_runner().cancel(job_id):
            await _quietly(service.cancel(job_id, "cancelled on request"))
        return f"Job {job_id} is being cancelled."

    @server.resource_template(
        RESULT_TEMPLATE, name="job_result", description="A result document of a finished job."
    )
    async def job_result(job_id: str, name: str) -> list[dict[str, Any]]:
        found = await server.job_service().store.get_result(job_id, name)
        if found is None:
            raise KeyError(name)
        mime_type, data = found
        uri = RESULT_TEMPLATE.format(job_id=job_id, name=name)
        if mime_type.startswith("text/") or mime_type == "application/json":
            return [{"uri": uri, "mimeType": mime_type, "text": data.decode()}]
        return [{"uri": uri, "mimeType": mime_type, "blob": base64.b64encode(data).decode()}]

    @server.resource(
        SCHEMAS_URI,
        name="job_event_schemas",
        mime_type="application/json",
        description="The JSON Schema of every job event type, keyed by its type.",
    )
    def job_event_schemas() -> dict[str, Any]:
        return all_schemas()


#: The tools a job's widget calls; the first two serve the model too.
WIDGET_JOB_TOOLS = ("get_job_status", "cancel_job")


def open_job_tools_to_widgets(server: Server) -> None:
    """Let widgets follow jobs: mark the job tools callable by them, and add `get_job_result`.

    Widgets poll because they cannot hold a stream. ChatGPT's `window.openai` bridge cannot
    read resources either, so the result document is also offered as a tool that only
    widgets see (MCP Apps hosts read the result resource instead).
    """
    if "get_job_result" in server.registry.tools:
        return
    for name in WIDGET_JOB_TOOLS:
        spec = server.registry.tools[name]
        opened = dataclasses.replace(spec, meta=merge_meta(spec.meta, ToolUI().tool_meta(server.name)))
        server.registry.add_tool(opened)

    @server.tool(
        name="get_job_result",
        ui=app_only(),
        annotations={"readOnlyHint": True, "idempotentHint": True},
    )
    async def get_job_result(
        job_id: Annotated[str, Field(alias="jobId", description="A completed job")],
    ) -> ToolResult:
        """The result document of a completed job, as structured content (for widgets)."""
        service = server.job_service()
        job = await known_job(service, job_id)
        if job.status != "completed" or not job.result_uri:
            return ToolResult(
                [text(f"Job {job_id} is {job.status}; it has a result only once it has completed.")],
                is_error=True,
            )
        name = job.result_uri.rsplit("/", 1)[-1]
        found = await service.store.get_result(job_id, name)
        if found is None or found[0] != "application/json":
            return ToolResult([text(f"Job {job_id} has no JSON result to show.")], is_error=True)
        document = orjson.loads(found[1])
        if not isinstance(document, dict):
            document = {"result": document}
        return ToolResult([text(job.summary or f"The result of job {job_id}.")], structured=document)
