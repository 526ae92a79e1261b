"""MCP Tasks on top of jobs: the 2025-11-25 core shape and the 2026-07-28 extension.

A task is a job whose body runs a tool. Its status comes from the job (pending and
running are "working"), except while the tool waits for input the client must give
with `tasks/update`: then it is "input_required". The core shape (task-augmented
`tools/call` with a `task` param, `tasks/get`, `tasks/result`, `tasks/list`,
`tasks/cancel`) serves handshake-era sessions; the extension (`resultType: "task"`,
`tasks/get`, `tasks/update`, `tasks/cancel`, opted into per request through
`clientCapabilities.extensions`) serves 2026-07-28. Jobs started by `@server.job`
tools are tasks too: the job id is the task id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import orjson

from herald.content import resource_link, text
from herald.jobs.record import JobRecord
from herald.jobs.service import UnknownJob
from herald.protocol.errors import InvalidParams, MethodNotFound, MissingClientCapability, ProtocolError
from herald.protocol.versions import is_at_least
from herald.server.inputs import answer_is_valid
from herald.server.jobs import JobContext, JobFailure
from herald.server.registry import ToolSpec
from herald.server.scope import RequestScope

if TYPE_CHECKING:
    from herald.server.app import Server

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 60 * 60 * 1000
POLL_INTERVAL_MS = 200
TASK_RESULT = "task-result.json"
TaskShape = Literal["core", "extension"]


class TaskInputs:
    """Input requests a task is waiting on, answered by `tasks/update`."""

    def __init__(self) -> None:
        self.pending: dict[str, dict[str, Any]] = {}
        self._answers: dict[str, asyncio.Future[Any]] = {}

    async def ask(self, requests: Mapping[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        futures = {key: loop.create_future() for key in requests}
        for key, (method, params) in requests.items():
            self.pending[key] = {"method": method, "params": params}
        self._answers.update(futures)
        try:
            return {key: await future for key, future in futures.items()}
        finally:
            for key in requests:
                self.pending.pop(key, None)
                self._answers.pop(key, None)

    def answer(self, responses: Mapping[str, Any]) -> None:
        """Hand answers to the waiting task; unknown keys and unusable answers are ignored."""
        for key, value in responses.items():
            waiting = self._answers.get(key)
            request = self.pending.get(key)
            if waiting is None or request is None or waiting.done():
                continue
            if answer_is_valid(request["method"], value):
                self.pending.pop(key, None)
                waiting.set_result(value)


class TaskManager:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.inputs: dict[str, TaskInputs] = {}

    # -- creating ------------------------------------------------------------------------------

    def wants_task(self, scope: RequestScope, spec: ToolSpec) -> TaskShape | None:
        """Whether this call runs as a task, and in which shape; refuses calls that must but cannot."""
        support = spec.task_support
        if scope.modern:
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
        self, scope: RequestScope, spec: ToolSpec, arguments: dict[str, Any], shape: TaskShape
    ) -> dict[str, Any]:
        from herald.server.handlers import execute_tool, make_context

        context = make_context(self.server, scope)
        if spec.starts_job:  # the job it starts is the task
            started = await execute_tool(self.server, scope, spec, arguments, context)
            return self.created(await self.job(started["structuredContent"]["jobId"]), shape)
        preflight = await spec.task_preflight(context) if spec.task_preflight is not None else None
        service = self.server.job_service()
        job = await service.create(spec.name, arguments, owner=scope.owner)
        inputs = self.inputs[job.job_id] = TaskInputs()
        context.input_round = None
        context.requester = None
        context.task_inputs = inputs
        context.preflight = preflight
        context.close_stream_callback = None

        async def body(ctx: JobContext) -> None:
            try:
                result = await execute_tool(self.server, scope, spec, arguments, context)
            except ProtocolError as error:
                raise JobFailure(str(error.code), error.message) from None
            finally:
                self.inputs.pop(job.job_id, None)
            uri = await ctx.save_result(TASK_RESULT, orjson.dumps(result), "application/json")
            ctx.complete(uri)

        self.server.job_runner().launch(job, body, {}, "ctx", context.job_log(job.job_id))
        return self.created(job, shape)

    def created(self, job: JobRecord, shape: TaskShape) -> dict[str, Any]:
        task = self.describe(job)
        if shape == "core":
            return {"task": task}
        return {
            "resultType": "task",
            "taskId": job.job_id,
            "status": task["status"],
            "createdAt": job.created_at,
            "lastUpdatedAt": job.updated_at,
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    # -- reading -----------------------------------------------------------------------------------

    def status(self, job: JobRecord) -> str:
        if job.terminal:
            return job.status
        inputs = self.inputs.get(job.job_id)
        return "input_required" if inputs is not None and inputs.pending else "working"

    def describe(self, job: JobRecord) -> dict[str, Any]:
        """The core shape of a task."""
        task: dict[str, Any] = {
            "taskId": job.job_id,
            "status": self.status(job),
            "createdAt": job.created_at,
            "lastUpdatedAt": job.updated_at,
            "ttl": TASK_TTL_MS,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if job.error:
            task["statusMessage"] = job.error.get("message", "")
        return task

    async def job(self, task_id: object) -> JobRecord:
        if not isinstance(task_id, str):
            raise InvalidParams("Invalid params: 'taskId' must be a string")
        try:
            return await self.server.job_service().get(task_id)
        except UnknownJob:
            raise InvalidParams(f"Unknown task: {task_id!r}") from None

    async def result(self, job: JobRecord) -> dict[str, Any]:
        """The tool's result for a completed task (a job tool's result is a link to its document)."""
        stored = await self.server.job_service().store.get_result(job.job_id, TASK_RESULT)
        if stored is not None:
            found: dict[str, Any] = orjson.loads(stored[1])
            return found
        uri = job.result_uri or ""
        return {
            "content": [text(job.summary or f"Job {job.job_id} completed."), resource_link(uri, "result")],
            "structuredContent": {"jobId": job.job_id, "resultResourceId": uri, "summary": job.summary},
        }

    def error(self, job: JobRecord) -> dict[str, Any]:
        error = job.error or {}
        code = error.get("code", "")
        numeric = int(code) if isinstance(code, str) and code.lstrip("-").isdigit() else -32603
        return {"code": numeric, "message": error.get("message", "The task failed.")}

    # -- the methods ------------------------------------------------------------------------------

    def require_extension(self, scope: RequestScope) -> None:
        if scope.modern and TASKS_EXTENSION not in (scope.client_capabilities.get("extensions") or {}):
            raise MissingClientCapability(
                f"tasks/* need the {TASKS_EXTENSION} extension in this request's client capabilities",
                required={"extensions": {TASKS_EXTENSION: {}}},
            )

    async def get(self, scope: RequestScope) -> dict[str, Any]:
        self.require_extension(scope)
        job = await self.job(scope.params.get("taskId"))
        if not scope.modern:
            return self.describe(job)
        detail: dict[str, Any] = {"resultType": "complete", "taskId": job.job_id, "status": self.status(job)}
        detail.update(createdAt=job.created_at, lastUpdatedAt=job.updated_at, ttlMs=TASK_TTL_MS)
        inputs = self.inputs.get(job.job_id)
        if detail["status"] == "input_required" and inputs is not None:
            detail["inputRequests"] = dict(inputs.pending)
        elif job.status == "completed":
            detail["result"] = await self.result(job)
        elif job.status == "failed":
            detail["error"] = self.error(job)
        return detail

    async def update(self, scope: RequestScope) -> dict[str, Any]:
        self.require_extension(scope)
        job = await self.job(scope.params.get("taskId"))
        responses = scope.params.get("inputResponses")
        inputs = self.inputs.get(job.job_id)
        if isinstance(responses, dict) and inputs is not None:
            inputs.answer(responses)
        return {"resultType": "complete"}

    async def cancel(self, scope: RequestScope) -> dict[str, Any]:
        self.require_extension(scope)
        job = await self.job(scope.params.get("taskId"))
        if not job.terminal and not self.server.job_runner().cancel(job.job_id):
            await self.server.job_service().cancel(job.job_id, "cancelled on request")
        if scope.modern:
            return {"resultType": "complete"}
        if not job.terminal:
            job = await self._until_ended(job.job_id)
        return self.describe(job)

    async def result_of(self, scope: RequestScope) -> dict[str, Any]:
        """tasks/result (core): wait for the task to end, then answer with the tool's result."""
        if scope.modern:
            raise MethodNotFound(
                "Method not found: tasks/result does not exist in protocol version 2026-07-28"
            )
        job = await self._until_ended((await self.job(scope.params.get("taskId"))).job_id)
        if job.status == "completed":
            result = await self.result(job)
        elif job.status == "failed":
            raise _TaskFailed(self.error(job))
        else:
            result = {"content": [text("The task was cancelled.")], "isError": True}
        result.setdefault("_meta", {})["io.modelcontextprotocol/related-task"] = {"taskId": job.job_id}
        return result

    async def list(self, scope: RequestScope) -> dict[str, Any]:
        if scope.modern:
            raise MethodNotFound("Method not found: tasks/list does not exist in protocol version 2026-07-28")
        service = self.server.job_service()
        jobs = [await service.get(job_id) for job_id in await service.store.job_ids(owner=scope.owner)]
        return {"tasks": [self.describe(job) for job in jobs]}

    async def _until_ended(self, job_id: str) -> JobRecord:
        """The job once it has ended (now, if it already has)."""
        service = self.server.job_service()
        ended = asyncio.Event()

        def listener(job: JobRecord, _: Any) -> None:
            if job.job_id == job_id and job.terminal:
                ended.set()

        stop = self.server.add_job_listener(listener)
        try:
            job = await service.get(job_id)
            if not job.terminal:
                await ended.wait()
            return await service.get(job_id)
        finally:
            stop()


class _TaskFailed(ProtocolError):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.code = error["code"]
