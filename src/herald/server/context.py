"""What a tool, resource or prompt function sees of the request it serves.

The context sends request-scoped messages (progress, log lines) on the request's own
outbox, so on HTTP they travel on that request's stream and never reach another
session. Progress must increase: a value that does not raises `ProgressError` here, in
the author's code, instead of confusing a client's progress bar.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from herald.protocol.errors import HeraldError, ProgressError
from herald.protocol.messages import Notification, RequestId
from herald.runtime.context import PYTHON_LEVELS
from herald.server.inputs import (
    ClientRequester,
    InputRequired,
    InputRound,
    TaskInputs,
    answer_is_valid,
    check_capability,
)
from herald.server.logging_levels import LogLevel, passes
from herald.server.outbox import Outbox
from herald.server.principal import Principal


@dataclass(slots=True)
class Context:
    """The request context handed to user functions that ask for it by annotation."""

    request_id: RequestId
    protocol_version: str
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    outbox: Outbox
    progress_token: str | int | None = None
    log_threshold: str | None = None
    requester: ClientRequester | None = None
    input_round: InputRound | None = None
    close_stream_callback: Callable[[], None] | None = None
    #: Who started this request, for delivering the events of jobs it starts.
    owner: str | None = None
    #: The authenticated caller, if the transport authenticates.
    principal: Principal | None = None
    #: The network address the request came from, where the transport knows it (HTTP): what
    #: job admission counts a caller by when there is no principal to count.
    peer: str | None = None
    #: Inside an MCP task: where input requests park until `tasks/update` answers them.
    task_inputs: TaskInputs | None = None
    #: What the tool's `task_preflight` returned, inside the task it led to.
    preflight: Any = None
    #: What the server's lifespan yielded (`Server(lifespan=...)`), or None without one.
    lifespan: Any = None
    #: The loop the request is served on: a plain `def` tool calls from a worker thread.
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _last_progress: float | None = field(default=None, repr=False)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send `notifications/progress` for this request, if the client asked for it."""
        if self._last_progress is not None and progress <= self._last_progress:
            raise ProgressError(f"progress must increase: {progress} after {self._last_progress}")
        if total is not None and progress > total:
            raise ProgressError(f"progress {progress} exceeds the total {total}")
        self._last_progress = progress
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.outbox.send(Notification("notifications/progress", params))
        await self.outbox.drain()

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send `notifications/message` if the client's log level lets `level` through."""
        if not passes(level, self.log_threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.outbox.send(Notification("notifications/message", params))
        await self.outbox.drain()

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared `capability` (e.g. "sampling", "elicitation")."""
        return capability in self.client_capabilities

    # -- input from the client -------------------------------------------------------------

    @property
    def request_state(self) -> Any:
        """What this tool passed as `state` to `ask` in the previous round (2026-07-28), if any."""
        return self.input_round.state if self.input_round is not None else None

    async def ask(
        self, requests: Mapping[str, tuple[str, dict[str, Any]]], *, state: Any = None
    ) -> dict[str, Any]:
        """Ask the client for several inputs at once; keys name them, values are (method, params).

        Handshake era: the requests go to the client on this request's stream and this
        waits for all answers. 2026-07-28: answered keys come from the client's retry; if
        any is missing the request ends with `input_required` (and runs again when the
        client retries), carrying `state` to `request_state` of the next round.
        """
        for method, _ in requests.values():
            check_capability(method, self.client_capabilities)
        if self.task_inputs is not None:
            return await self.task_inputs.ask(requests)
        if self.input_round is not None:
            answers = self.input_round.answers
            missing = {
                key: {"method": method, "params": params}
                for key, (method, params) in requests.items()
                if not answer_is_valid(method, answers.get(key))
            }
            if missing:
                kept = {key: value for key, value in answers.items() if key not in missing}
                raise InputRequired(missing, kept, state if state is not None else self.input_round.state)
            return {key: answers[key] for key in requests}
        if self.requester is None:
            raise HeraldError("this transport cannot send requests to the client")
        keys = list(requests)
        results = await asyncio.gather(
            *(self.requester(method, params) for method, params in requests.values())
        )
        return dict(zip(keys, results, strict=True))

    async def elicit(
        self, message: str, requested_schema: dict[str, Any], *, key: str = "elicitation"
    ) -> dict[str, Any]:
        """Ask the user for structured input; returns the `ElicitResult` (action, content)."""
        params = {"message": message, "requestedSchema": requested_schema}
        answer: dict[str, Any] = (await self.ask({key: ("elicitation/create", params)}))[key]
        return answer

    async def sample(
        self, messages: list[dict[str, Any]], *, max_tokens: int, key: str = "sampling", **options: Any
    ) -> dict[str, Any]:
        """Ask the client's model for a completion; returns the `CreateMessageResult`."""
        params = {"messages": messages, "maxTokens": max_tokens, **options}
        answer: dict[str, Any] = (await self.ask({key: ("sampling/createMessage", params)}))[key]
        return answer

    async def list_roots(self, *, key: str = "roots") -> list[dict[str, Any]]:
        """The client's roots (directories or files it shares)."""
        answer = (await self.ask({key: ("roots/list", {})}))[key]
        roots: list[dict[str, Any]] = answer.get("roots", [])
        return roots

    def close_stream(self) -> None:
        """End this request's HTTP stream now; the client resumes it with `Last-Event-ID`.

        Long requests use it to free a connection (SEP-1699 polling); the rest of the
        request's messages are stored and replayed. A no-op on transports without streams.
        """
        callback = self.close_stream_callback
        if callback is None:
            return
        if self.loop is not None and not _runs(self.loop):  # a plain `def` tool, on its thread
            self.loop.call_soon_threadsafe(callback)
        else:
            callback()

    def job_log(self, job_id: str) -> Callable[[str, Any], None]:
        """Where a job started by this request writes its log lines: the server's log."""
        job_logger = logging.getLogger(f"herald.jobs.{job_id}")

        def log(level: str, data: Any) -> None:
            job_logger.log(PYTHON_LEVELS.get(level, logging.INFO), "%s", data)

        return log

    @staticmethod
    async def checkpoint() -> None:
        """Give cancellation a chance in long CPU-bound loops."""
        await asyncio.sleep(0)


def _runs(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread is running `loop`."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
