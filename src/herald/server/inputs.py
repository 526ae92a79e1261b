"""Asking the client for input in the middle of a request, the same way in both eras.

A tool calls `ctx.elicit(...)`, `ctx.sample(...)` or `ctx.list_roots()`. In the
handshake era that is a server-to-client request on the call's own stream, and the tool
waits for the answer. In the 2026-07-28 era there are no server-to-client requests: the
call ends with an `input_required` result listing what is needed, the client retries
with the answers, and the tool runs again from the top. Answers from earlier rounds
travel in the sealed `requestState`, so each `ask` finds every answer it already got.
Inside an MCP task the requests wait in the task's `TaskInputs` until `tasks/update`
answers them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from herald.protocol.errors import MissingClientCapability

#: Sends a request to the client and returns its result (handshake era only).
ClientRequester = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

#: Which client capability each server-to-client method needs.
REQUIRED_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class InputRequired(Exception):
    """Raised inside a modern-era request to end it with an `input_required` result."""

    def __init__(self, requests: dict[str, dict[str, Any]], answers: dict[str, Any], state: Any) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests
        self.answers = answers
        self.state = state


@dataclass(slots=True)
class InputRound:
    """What a modern request already knows: answers so far and the tool's own state."""

    answers: dict[str, Any] = field(default_factory=dict)
    state: Any = None


def check_capability(method: str, client_capabilities: Mapping[str, Any]) -> None:
    capability = REQUIRED_CAPABILITY[method]
    if capability not in client_capabilities:
        raise MissingClientCapability(
            f"This request needs the client capability {capability!r}, which the client did not declare",
            required={capability: {}},
        )


def answer_is_valid(method: str, answer: Any) -> bool:
    """Whether a client's answer has the shape its request calls for (bad ones are asked again)."""
    if not isinstance(answer, dict):
        return False
    if method == "elicitation/create":
        return answer.get("action") in ("accept", "decline", "cancel")
    if method == "sampling/createMessage":
        return "content" in answer and "role" in answer
    return isinstance(answer.get("roots"), list)


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
