"""MCP Tasks on top of jobs: the 2025-11-25 core shape and the 2026-07-28 extension.

A task is a job whose body runs a tool. Its status comes from the job (pending and
running are "working"), except while the tool waits for input the client must give
with `tasks/update`: then it is "input_required". The core shape (task-augmented
`tools/call` with a `task` param, `tasks/get`, `tasks/result`, `tasks/list`,
`tasks/cancel`) serves handshake-era sessions; the extension (`resultType: "task"`,
`tasks/get`, `tasks/update`, `tasks/cancel`, opted into per request through
`clientCapabilities.extensions`) serves 2026-07-28. Jobs started by `@server.job`
tools are tasks too: the job id is the task id.

The core shapes (`Task`, `CreateTaskResult`, `GetTaskResult`, `CancelTaskResult`,
`ListTasksResult`) are built with the official wire types, so they are the schema's; the
extension's shapes are not in `mcp-types` and are written here. Either way a completed
task's result is a `CallToolResult` that keeps the tool's own `outputSchema`, because
clients validate it against the schema they read in `tools/list`.

The two shapes differ on cancelling a task that has already ended: the 2025-11-25 spec
says a receiver MUST reject it with -32602, SEP-2663 says the server MUST acknowledge
every `tasks/cancel`, so the extension answers its empty ack.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, cast

import orjson
from mcp_types import CancelTaskResult, CreateTaskResult, GetTaskResult, ListTasksResult, Task
from pydantic import BaseModel

from herald.content import resource_link, text
from herald.jobs.record import JobRecord
from herald.jobs.service import UnknownJob
from herald.protocol.cursor import paginate
from herald.protocol.errors import InvalidParams, MethodNotFound, MissingClientCapability, ProtocolError
from herald.protocol.validation import serialize_result
from herald.protocol.versions import is_at_least
from herald.runtime.context import JobContext, JobFailure
from herald.runtime.jobs import Jobs
from herald.runtime.runner import ShuttingDown
from herald.server.context import Context
from herald.server.inputs import TaskInputs
from herald.server.principal import Principal, viewer
from herald.server.registry import Registry, ToolSpec
from herald.server.scope import RequestScope
from herald.server.stored_inputs import StoredInputs, leave_answers, stored_requests

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 60 * 60 * 1000
POLL_INTERVAL_MS = 200
TASK_RESULT = "task-result.json"
TaskShape = Literal["core", "extension"]
#: Runs the tool of a `tools/call` with the context given, to its wire result.
ToolRun = Callable[[Context], Awaitable[dict[str, Any]]]


class TaskHost(Protocol):
    """What tasks use of the server: its jobs, its tools and its page size."""

    registry: Registry
    page_size: int
    jobs: Jobs


class TaskManager:
    def __init__(self, server: TaskHost) -> None:
        self.server = server
        #: The input of the tasks this process runs; others' is in the store (`stored_inputs`).
        self.inputs: dict[str, TaskInputs] = {}
        #: Told the id of a task whose answers this process left in the store, so the
        #: replica running it looks at once (set by the HTTP replicas' relay).
        self.answers_left: Callable[[str], None] | None = None

    # -- creating ------------------------------------------------------------------------------

    def wants_task(self, scope: RequestScope, spec: ToolSpec) -> TaskShape | None:
        """Whether this call runs as a task, and in which shape; refuses calls that must but cannot."""
        support = spec.task_support
        if scope.era.modern:
            declared = TASKS_EXTENSION in (scope.client_capabilities.get("extensions") or {})
            if support == "required" and not declared:
                raise MissingClientCapability(
                    f"Tool {spec.name!r} runs only as a task: declare the {TASKS_EXTENSION} extension",
                    required={"extensions": {TASKS_EXTENSION: {}}},
                )
            return "extension" if declared and support in ("optional", "required") else None
        augmented = isinstance(scope.params.get("task"), dict) and is_at_least(scope.version, "2025-11-25")
        if support == "required" and not augmented:
            raise InvalidParams(f"Tool {spec.name!r} runs only as a task: add a 'task' to the call's params")
        return "core" if augmented and support in ("optional", "required") else None

    async def start(
        self,
        scope: RequestScope,
        spec: ToolSpec,
        arguments: dict[str, Any],
        shape: TaskShape,
        context: Context,
        run: ToolRun,
    ) -> dict[str, Any]:
        """Run a `tools/call` as a task: `run(context)` runs the tool (the handlers know how).

        The call's `context` becomes the task's: input requests wait for `tasks/update`.
        """
        if spec.starts_job:  # the job it starts is the task
            started = await run(context)
            return self.created(await self.job(started["structuredContent"]["jobId"]), shape)
        preflight = await spec.task_preflight(context) if spec.task_preflight is not None else None
        jobs = self.server.jobs
        context.input_round = None
        context.requester = None
        context.preflight = preflight
        context.close_stream_callback = None

        readied: list[str] = []

        def ready(job: JobRecord) -> None:
            """The request's context becomes the task's: input requests wait for `tasks/update`."""
            readied.append(job.job_id)
            context.task_inputs = self.inputs[job.job_id] = TaskInputs(StoredInputs(jobs, job.job_id))

        async def body(ctx: JobContext, **_: Any) -> None:  # the arguments are the request's
            try:
                result = await run(context)
            except ProtocolError as error:
                raise JobFailure(str(error.code), error.message) from None
            finally:
                self.inputs.pop(ctx.job_id, None)
            uri = await ctx.save_result(TASK_RESULT, orjson.dumps(result), "application/json")
            ctx.complete(uri)

        try:
            job = await jobs.start(
                spec.name,
                body,
                arguments,
                context_name="ctx",
                job_log=context.job_log,
                owner=scope.owner,
                retain_seconds=TASK_TTL_MS / 1000,
                here=True,
                before_run=ready,
            )
        except ShuttingDown:
            for job_id in readied:
                self.inputs.pop(job_id, None)
            raise
        return self.created(job, shape)

    def created(self, job: JobRecord, shape: TaskShape) -> dict[str, Any]:
        if shape == "core":
            return wire(CreateTaskResult(task=self.describe(job)))
        return {
            "resultType": "task",
            "taskId": job.job_id,
            "status": self.status(job),
            "createdAt": job.created_at,
            "lastUpdatedAt": job.updated_at,
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    # -- reading -----------------------------------------------------------------------------------

    def status(self, job: JobRecord, pending: dict[str, Any] | None = None) -> str:
        """The task's status; `pending` is what it waits on (`waiting_on`)."""
        if job.terminal:
            return job.status
        return "input_required" if pending else "working"

    async def waiting_on(self, job: JobRecord) -> dict[str, dict[str, Any]]:
        """The input requests the task waits on, whichever replica runs it."""
        if job.terminal or self.starts_job(job):
            return {}
        inputs = self.inputs.get(job.job_id)
        if inputs is not None:
            return dict(inputs.pending)
        return await stored_requests(self.server.jobs.reader, job.job_id)

    def look_for_answers(self, job_id: str) -> None:
        """Another replica left answers for a task of this process's: take them now."""
        inputs = self.inputs.get(job_id)
        if inputs is not None:
            inputs.look_now()

    def fields(self, job: JobRecord, pending: dict[str, Any] | None = None) -> dict[str, Any]:
        """The core `Task` fields of a job, by model field name (shared by every core result)."""
        return {
            "task_id": job.job_id,
            "status": self.status(job, pending),
            "status_message": job.error.get("message") if job.error else None,
            "created_at": job.created_at,
            "last_updated_at": job.updated_at,
            "ttl": TASK_TTL_MS,
            "poll_interval": POLL_INTERVAL_MS,
        }

    def describe(self, job: JobRecord, pending: dict[str, Any] | None = None) -> Task:
        """The core shape of a task."""
        return Task(**self.fields(job, pending))

    async def job(self, task_id: object, principal: Principal | None = None) -> JobRecord:
        """The task's job; another principal's task is answered as an unknown one."""
        if not isinstance(task_id, str):
            raise InvalidParams("Invalid params: 'taskId' must be a string")
        try:
            return await self.server.jobs.visible(task_id, viewer(principal))
        except UnknownJob:
            raise InvalidParams(f"Unknown task: {task_id!r}") from None

    async def result(self, job: JobRecord) -> dict[str, Any]:
        """The tool's result for a completed task, the same in both shapes."""
        stored = await self.server.jobs.reader.get_result(job.job_id, TASK_RESULT)
        if stored is not None:
            found: dict[str, Any] = orjson.loads(stored[1])
            return found
        return job_tool_result(job)

    def starts_job(self, job: JobRecord) -> bool:
        """Whether the task is a `@server.job` tool's job (rather than a tool run as a task)."""
        spec = self.server.registry.tools.get(job.tool)
        return spec is not None and spec.starts_job

    def error(self, job: JobRecord) -> dict[str, Any]:
        error = job.error or {}
        code = error.get("code", "")
        numeric = int(code) if isinstance(code, str) and code.lstrip("-").isdigit() else -32603
        return {"code": numeric, "message": error.get("message", "The task failed.")}

    # -- the methods ------------------------------------------------------------------------------

    def require_extension(self, scope: RequestScope) -> None:
        if scope.era.modern and TASKS_EXTENSION not in (scope.client_capabilities.get("extensions") or {}):
            raise MissingClientCapability(
                f"tasks/* need the {TASKS_EXTENSION} extension in this request's client capabilities",
                required={"extensions": {TASKS_EXTENSION: {}}},
            )

    async def get(self, scope: RequestScope) -> dict[str, Any]:
        self.require_extension(scope)
        job = await self.job(scope.params.get("taskId"), scope.principal)
        pending = await self.waiting_on(job)
        if not scope.era.modern:
            return wire(GetTaskResult(**self.fields(job, pending)))
        detail: dict[str, Any] = {"resultType": "complete", "taskId": job.job_id}
        detail.update(status=self.status(job, pending), createdAt=job.created_at)
        detail.update(lastUpdatedAt=job.updated_at, ttlMs=TASK_TTL_MS)
        if pending:
            detail["inputRequests"] = pending
        elif job.status == "completed":
            detail["result"] = await self.result(job)
        elif job.status == "failed":
            detail["error"] = self.error(job)
        return detail

    async def update(self, scope: RequestScope) -> dict[str, Any]:
        self.require_extension(scope)
        job = await self.job(scope.params.get("taskId"), scope.principal)
        responses = scope.params.get("inputResponses")
        if not isinstance(responses, dict) or job.terminal:
            return {"resultType": "complete"}
        inputs = self.inputs.get(job.job_id)
        if inputs is not None:
            inputs.answer(responses)
        elif await leave_answers(self.server.jobs, job.job_id, responses) and self.answers_left:
            self.answers_left(job.job_id)  # the task runs on another replica: it looks now
        return {"resultType": "complete"}

    async def cancel(self, scope: RequestScope) -> dict[str, Any]:
        """tasks/cancel: stop the job; the core shape answers the cancelled task, the extension an ack.

        A task that has already ended cannot be cancelled: the core shape rejects that with
        -32602, as 2025-11-25 requires. SEP-2663 requires an ack for every `tasks/cancel`
        instead (cancelling is only a request there), so the extension answers the same ack.
        """
        self.require_extension(scope)
        job = await self.job(scope.params.get("taskId"), scope.principal)
        if job.terminal and not scope.era.modern:
            raise InvalidParams(_not_cancellable(job))
        if not job.terminal:
            await self.server.jobs.cancel(job.job_id)
        if scope.era.modern:
            return {"resultType": "complete"}
        job = await self.server.jobs.until_ended(job.job_id)
        if job.status != "cancelled":  # it ended another way while the cancellation was on its way
            raise InvalidParams(_not_cancellable(job))
        return wire(CancelTaskResult(**self.fields(job)))

    async def result_of(self, scope: RequestScope) -> dict[str, Any]:
        """tasks/result (core): wait for the task to end, then answer with the tool's result."""
        if scope.era.modern:
            raise MethodNotFound(
                "Method not found: tasks/result does not exist in protocol version 2026-07-28"
            )
        job = await self.server.jobs.until_ended(
            (await self.job(scope.params.get("taskId"), scope.principal)).job_id
        )
        if job.status == "completed":
            result = await self.result(job)
        elif self.starts_job(job):  # the tool's own answer, with the job's error in it
            result = job_tool_result(job)
        elif job.status == "failed":
            raise _TaskFailed(self.error(job))
        else:
            result = {"content": [text("The task was cancelled.")], "isError": True}
        result.setdefault("_meta", {})["io.modelcontextprotocol/related-task"] = {"taskId": job.job_id}
        return serialize_result("tools/call", scope.version, result)  # what the call itself would answer

    async def list(self, scope: RequestScope) -> dict[str, Any]:
        """tasks/list (core): the caller's tasks, oldest first, a page at a time.

        The cursor holds an offset into the owner's jobs, which the stores keep in creation
        order, so new tasks only ever join the end and a cursor stays valid. Only the jobs
        of the page are read.
        """
        if scope.era.modern:
            raise MethodNotFound("Method not found: tasks/list does not exist in protocol version 2026-07-28")
        cursor = scope.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidParams("Invalid params for tasks/list: 'cursor' must be a string")
        jobs = self.server.jobs
        ids: list[dict[str, object]] = [
            {"taskId": job_id} for job_id in await jobs.reader.job_ids(owner=scope.owner)
        ]
        page = paginate("tasks", ids, cursor, self.server.page_size)
        entries = cast(list[dict[str, str]], page["tasks"])  # a slice of `ids`
        tasks = []
        for entry in entries:
            job = await jobs.get(entry["taskId"])
            tasks.append(self.describe(job, await self.waiting_on(job)))
        next_cursor = cast(str | None, page.get("nextCursor"))
        return wire(ListTasksResult(tasks=tasks, next_cursor=next_cursor))


def wire(model: BaseModel) -> dict[str, Any]:
    """A wire-type model as the JSON it stands for (aliases, absent fields left out)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def job_tool_result(job: JobRecord) -> dict[str, Any]:
    """The result of a `@server.job` tool's task: the tool's answer, for the job as it ended.

    The job is the task, so `structuredContent` keeps the tool's `outputSchema`
    (`JOB_TOOL_OUTPUT_SCHEMA`), which clients check: the job id, its final status, and the
    result document and summary of a completed job, or the error of a failed or cancelled
    one (then the result is a tool error, `isError`, since the tool's work did not get
    done; the request itself was fine). The text and a resource link say the same for
    clients that read only `content`.
    """
    structured: dict[str, Any] = {"jobId": job.job_id, "status": job.status}
    if job.status == "completed":
        content = [text(job.summary or f"Job {job.job_id} completed.")]
        if job.result_uri:
            structured["resultResourceId"] = job.result_uri
            content.append(resource_link(job.result_uri, "result"))
        if job.summary is not None:
            structured["summary"] = job.summary
        return {"content": content, "structuredContent": structured}
    error = job.error or {"code": "cancelled", "message": f"Job {job.job_id} was cancelled."}
    structured["error"] = error
    return {"content": [text(error["message"])], "structuredContent": structured, "isError": True}


def _not_cancellable(job: JobRecord) -> str:
    return f"Task {job.job_id!r} is already {job.status} and cannot be cancelled"


class _TaskFailed(ProtocolError):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.code = error["code"]
