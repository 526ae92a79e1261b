"""The server side of jobs: the tools that start them and the ones that follow them.

`@server.job` turns a function into a tool that answers at once with a job id;
the job runtime (`herald.runtime`) runs the function in the background with a
`JobContext`, and every change goes through `JobService`, so the job's events are stored
before anyone sees them. Alongside the job tools the server offers `get_job_status` (a
cursor over a job's events, for clients that cannot hold a stream, such as widgets),
`cancel_job`, the job results as resources and the JSON Schemas of the event types; this
module defines them and their wire shapes.

It registers them on a `JobHost`, the few things it uses of the server, so it never
imports `Server` (which imports it).
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections.abc import Callable
from typing import Annotated, Any, Protocol

import orjson
from pydantic import Field
from pydantic_core import to_jsonable_python

from herald.content import ToolResult, text
from herald.jobs.documents import unpack
from herald.jobs.events import ERROR_SCHEMA, all_schemas
from herald.jobs.machine import JobStatus
from herald.jobs.record import JobRecord
from herald.jobs.service import ExpiredJob, UnknownJob
from herald.protocol.cursor import decode_cursor, encode_cursor
from herald.protocol.errors import InvalidParams
from herald.runtime.context import RESULT_TEMPLATE
from herald.runtime.jobs import Jobs
from herald.runtime.runner import ShuttingDown
from herald.server.admission import Admission
from herald.server.context import Context
from herald.server.principal import Principal, viewer
from herald.server.registry import Registry, ToolSpec
from herald.server.signature import Signature
from herald.server.specs import resource_spec, template_spec, tool_spec
from herald.server.widgets import ToolUI, app_only, merge_meta

logger = logging.getLogger("herald.jobs")


class JobHost(Protocol):
    """What the job tools use of the server: where to register, and its jobs."""

    name: str
    registry: Registry
    max_jobs_per_owner: int | None
    max_waiting_jobs: int | None
    admission: Admission
    jobs: Jobs
    upload_parameters: dict[str, str]


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


def job_tool(
    server: JobHost,
    signature: Signature,
    run: Callable[..., Any],
    *,
    name: str,
    description: str,
    title: str | None,
    annotations: dict[str, Any] | None,
    meta: dict[str, Any] | None,
) -> ToolSpec:
    """The tool that starts a job run by `run`, whose function's arguments `signature` reads."""
    job_context_name = signature.context_parameter

    async def start(**values: Any) -> ToolResult:
        context: Context = values.pop("__request_context__")
        if not server.jobs.accepting:
            raise ShuttingDown()
        refusal = _refusal(server, context)
        if refusal is not None:
            return refusal
        place = server.admission.hold(admission_key(context))
        try:
            job = await server.jobs.start(
                name,
                run,
                to_jsonable_python(values),  # kept as JSON; each run restores the declared types
                context_name=job_context_name,
                job_log=context.job_log,
                owner=context.owner,
                progress_token=context.progress_token,
            )
        except BaseException:
            server.admission.release(place)
            raise
        server.admission.admit(place, job.job_id)
        return ToolResult(
            [text(f"Started job {job.job_id}. Follow it with get_job_status(jobId={job.job_id!r}).")],
            structured={"jobId": job.job_id, "status": "pending"},
        )

    # The job's own lifespan parameters are filled where it runs (`Server.job`), not here.
    start_signature = dataclasses.replace(
        signature, context_parameter="__request_context__", from_lifespan=()
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


def admission_key(context: Context) -> str:
    """Who a start counts against: the authenticated subject, else the network address the
    request came from (every session and sessionless request from there), else its session.

    Without a principal, a fresh session or a request without one is free to make: only the
    address is the client's to keep. Several people behind one NAT share its cap.
    """
    if context.principal is not None:
        return context.principal.owner
    if context.peer is not None:
        return f"peer:{context.peer}"
    return context.owner or ""


def _refusal(server: JobHost, context: Context) -> ToolResult | None:
    """A refusal the model can act on when the server or this client already has its most jobs.

    The per-client count is the larger of the jobs this process admitted for the client and,
    for an owner (a principal or a session), the jobs of that owner every process has told
    of (`Admission.open_of`: with a shared store, every replica's; a job open when this process
    started counts from its next event). A network address is counted per process: behind a
    load balancer, a client without a token may have the cap on each replica.
    """
    waiting_cap = server.max_waiting_jobs
    if waiting_cap is not None and server.admission.waiting() >= waiting_cap:
        return ToolResult(
            [
                text(
                    f"Not started: the server already has {waiting_cap} jobs waiting to run, the most it "
                    "queues. Try again in a minute, when some have started."
                )
            ],
            is_error=True,
        )
    cap = server.max_jobs_per_owner
    if cap is None:
        return None
    key = admission_key(context)
    counted = server.admission.admitted(key)
    if context.principal is not None or context.peer is None:
        counted = max(counted, server.admission.open_of(context.owner or ""))
    if counted < cap:
        return None
    return ToolResult(
        [
            text(
                f"Not started: you have {counted} jobs running or waiting, the most one client may have "
                "at once. Wait for one to end (get_job_status) or stop one (cancel_job), then try again."
            )
        ],
        is_error=True,
    )


async def known_job(jobs: Jobs, job_id: str, principal: Principal | None) -> JobRecord:
    """The job a tool was asked about; an unknown id is the caller's mistake (-32602).

    A job the caller may not see (another principal's, with authentication on) is answered
    exactly as an unknown one, so the answer does not tell that it exists.
    """
    try:
        return await jobs.visible(job_id, viewer(principal))
    except ExpiredJob:
        raise InvalidParams(
            f"Unknown job: {job_id!r} expired. Finished jobs are kept for a while, then forgotten "
            "with their events and results; start the job again to get a new one."
        ) from None
    except UnknownJob:
        raise InvalidParams(f"Unknown job: {job_id!r}") from None


def install_job_support(server: JobHost) -> None:
    """The tools and resources every server with jobs offers."""

    async def get_job_status(
        ctx: Context,
        job_id: Annotated[str, Field(alias="jobId", description="The id a job tool returned")],
        cursor: Annotated[str | None, Field(description="nextCursor of the previous answer")] = None,
    ) -> ToolResult:
        """The status of a job and its events since `cursor` (all of them without one), oldest first."""
        job = await known_job(server.jobs, job_id, ctx.principal)
        listing = f"job-events:{job_id}"
        after = decode_cursor(listing, cursor) if cursor else 0
        # Most polls find nothing new (a job waiting its turn): the record says so already.
        events = await server.jobs.reader.events_after(job_id, after) if job.sequence > after else []
        last = events[-1].sequence if events else after
        status: dict[str, Any] = {
            "jobId": job_id,
            "status": job.status,
            "percentage": job.percentage,
            "stage": job.stage,
            "events": [event.to_params() for event in events],
            "nextCursor": encode_cursor(listing, last),
            "pollAfterMs": None if job.terminal else server.jobs.poll_after_ms,
        }
        if job.result_uri:
            status["resultResourceId"] = job.result_uri
        if job.error:
            status["error"] = job.error
        summary = (
            f"Job {job_id} is {job.status} ({job.percentage:.0f}%{', ' + job.stage if job.stage else ''})."
        )
        return ToolResult([text(summary)], structured=status)

    async def cancel_job(
        ctx: Context,
        job_id: Annotated[str, Field(alias="jobId", description="The job to cancel")],
    ) -> str:
        """Cancel a pending or running job. Cancelling a finished job changes nothing."""
        job = await known_job(server.jobs, job_id, ctx.principal)
        if job.terminal:
            return f"Job {job_id} has already ended: {job.status}."
        await server.jobs.cancel(job_id)
        return f"Job {job_id} is being cancelled."

    async def job_result(ctx: Context, job_id: str, name: str) -> list[dict[str, Any]]:
        try:
            await server.jobs.visible(job_id, viewer(ctx.principal))
        except UnknownJob:  # an expired one too, or another's: the answer for no job at all
            raise KeyError(name) from None
        found = await server.jobs.reader.get_result(job_id, name)
        if found is None:
            raise KeyError(name)
        mime_type, data = unpack(*found)
        uri = RESULT_TEMPLATE.format(job_id=job_id, name=name)
        if mime_type.startswith("text/") or mime_type == "application/json":
            return [{"uri": uri, "mimeType": mime_type, "text": data.decode()}]
        return [{"uri": uri, "mimeType": mime_type, "blob": base64.b64encode(data).decode()}]

    async def job_event_schemas() -> dict[str, Any]:  # async: nothing to hand a thread
        return all_schemas()

    registry = server.registry
    registry.add_tool(
        tool_spec(
            get_job_status,
            output_schema=JOB_STATUS_SCHEMA,
            annotations={"readOnlyHint": True, "idempotentHint": True},
        )
    )
    registry.add_tool(tool_spec(cancel_job, annotations={"destructiveHint": False, "idempotentHint": True}))
    registry.add_template(
        template_spec(job_result, RESULT_TEMPLATE, description="A result document of a finished job.")
    )
    registry.add_resource(
        resource_spec(
            job_event_schemas,
            SCHEMAS_URI,
            mime_type="application/json",
            description="The JSON Schema of every job event type, keyed by its type.",
        )
    )


#: The tools a job's widget calls; the first two serve the model too.
WIDGET_JOB_TOOLS = ("get_job_status", "cancel_job")


def open_job_tools_to_widgets(server: JobHost) -> None:
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

    async def get_job_result(
        ctx: Context,
        job_id: Annotated[str, Field(alias="jobId", description="A completed job")],
    ) -> ToolResult:
        """The result document of a completed job, as structured content (for widgets)."""
        job = await known_job(server.jobs, job_id, ctx.principal)
        if job.status != "completed" or not job.result_uri:
            return ToolResult(
                [text(f"Job {job_id} is {job.status}; it has a result only once it has completed.")],
                is_error=True,
            )
        name = job.result_uri.rsplit("/", 1)[-1]
        found = await server.jobs.reader.get_result(job_id, name)
        mime_type, data = unpack(*found) if found is not None else ("", b"")
        if mime_type != "application/json":
            return ToolResult([text(f"Job {job_id} has no JSON result to show.")], is_error=True)
        document = orjson.loads(data)
        if not isinstance(document, dict):
            document = {"result": document}
        return ToolResult([text(job.summary or f"The result of job {job_id}.")], structured=document)

    server.registry.add_tool(
        tool_spec(
            get_job_result,
            annotations={"readOnlyHint": True, "idempotentHint": True},
            meta=app_only().tool_meta(server.name),
        )
    )
