"""Asking the client for input in the middle of a request, the same way in both eras.

A tool calls `ctx.elicit(...)`, `ctx.sample(...)` or `ctx.list_roots()`. In the
handshake era that is a server-to-client request on the call's own stream, and the tool
waits for the answer. In the 2026-07-28 era there are no server-to-client requests: the
call ends with an `input_required` result listing what is needed, the client retries
with the answers, and the tool runs again from the top. Answers from earlier rounds
travel in the sealed `requestState`, so each `ask` finds every answer it already got.
Inside an MCP task the requests wait in the task's `TaskInputs` until `tasks/update`
answers them. They are kept in the job store too (`InputKeeper`), because the client's
`tasks/get` and `tasks/update` may reach another replica than the one running the task:
that replica reads the requests there and leaves the answers there, and the task takes
them at the next look (at once when the replica's message reaches it, else within
`LOOK_EVERY_SECONDS`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from herald.protocol.errors import MissingClientCapability

#: Sends a request to the client and returns its result (handshake era only).
ClientRequester = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

#: How often a task waiting on input looks in the store for answers given elsewhere.
LOOK_EVERY_SECONDS = 1.0

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


class InputKeeper(Protocol):
    """Where a task's input requests are kept for other replicas, and their answers found."""

    async def save(self, round_number: int, pending: dict[str, dict[str, Any]]) -> None: ...

    async def answers(self, round_number: int) -> dict[str, Any]: ...


class TaskInputs:
    """Input requests a task is waiting on, answered by `tasks/update` on any replica.

    Each `ask` is a round with a number, so answers left in the store for an earlier
    round are never taken for a later request with the same key.
    """

    def __init__(self, keeper: InputKeeper | None = None) -> None:
        self.pending: dict[str, dict[str, Any]] = {}
        self.round = 0
        self._answers: dict[str, asyncio.Future[Any]] = {}
        self._keeper = keeper
        self._look = asyncio.Event()

    async def ask(self, requests: Mapping[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        futures = {key: loop.create_future() for key in requests}
        self.round += 1
        for key, (method, params) in requests.items():
            self.pending[key] = {"method": method, "params": params}
        self._answers.update(futures)
        try:
            if self._keeper is not None:
                await self._keeper.save(self.round, self.pending)
            while not all(future.done() for future in futures.values()):
                look = asyncio.ensure_future(self._look.wait())
                waiting = {look, *(future for future in futures.values() if not future.done())}
                try:
                    await asyncio.wait(
                        waiting, timeout=LOOK_EVERY_SECONDS, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    look.cancel()
                self._look.clear()
                if self._keeper is not None and not all(future.done() for future in futures.values()):
                    self.answer(await self._keeper.answers(self.round))
            answered = {key: future.result() for key, future in futures.items()}
        finally:
            for key in requests:
                self.pending.pop(key, None)
                self._answers.pop(key, None)
        if self._keeper is not None:
            await self._keeper.save(self.round, self.pending)
        return answered

    def look_now(self) -> None:
        """Answers were left in the store: look before the next `LOOK_EVERY_SECONDS`."""
        self._look.set()

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
