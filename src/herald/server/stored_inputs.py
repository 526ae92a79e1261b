"""A task's input requests and their answers, kept in the job store for every replica.

The replica running a task waiting on input writes what it asks (`TASK_INPUT_REQUESTS`,
with the round's number) next to the task's other results. A replica that serves the
client's `tasks/get` reads the requests there; one that serves `tasks/update` leaves the
answers there (`TASK_INPUT_ANSWERS`, for that round), and the task takes them.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

TASK_INPUT_REQUESTS = "task-input-requests.json"
TASK_INPUT_ANSWERS = "task-input-answers.json"


class Readable(Protocol):
    """Where a task's documents are read: `herald.runtime.Jobs`, or a `JobReader`."""

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None: ...


class Documents(Readable, Protocol):
    """Where a task's documents are also written, through the job's writer: `herald.runtime.Jobs`."""

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None: ...


class StoredInputs:
    """The `InputKeeper` of one task: its requests and answers in the job store."""

    def __init__(self, store: Documents, job_id: str) -> None:
        self.store = store
        self.job_id = job_id

    async def save(self, round_number: int, pending: dict[str, dict[str, Any]]) -> None:
        document = orjson.dumps({"round": round_number, "requests": pending})
        await self.store.put_result(self.job_id, TASK_INPUT_REQUESTS, "application/json", document)

    async def answers(self, round_number: int) -> dict[str, Any]:
        found = await _read(self.store, self.job_id, TASK_INPUT_ANSWERS)
        if found is None or found.get("round") != round_number:
            return {}
        responses = found.get("responses")
        return responses if isinstance(responses, dict) else {}


async def stored_requests(store: Readable, job_id: str) -> dict[str, dict[str, Any]]:
    """What the task waits on now, wherever it runs (nothing, if it asked for nothing)."""
    found = await _read(store, job_id, TASK_INPUT_REQUESTS)
    requests = found.get("requests") if found is not None else None
    return requests if isinstance(requests, dict) else {}


async def leave_answers(store: Documents, job_id: str, responses: dict[str, Any]) -> bool:
    """Leave answers for the round the task waits on; False if it waits on nothing.

    Answers already left for the same round are kept unless answered again, so two
    `tasks/update` calls that each answer part of a round add up.
    """
    asked = await _read(store, job_id, TASK_INPUT_REQUESTS)
    if asked is None or not asked.get("requests"):
        return False
    round_number = asked.get("round")
    earlier = await _read(store, job_id, TASK_INPUT_ANSWERS)
    kept = earlier.get("responses") if earlier is not None and earlier.get("round") == round_number else None
    merged = {**(kept if isinstance(kept, dict) else {}), **responses}
    document = orjson.dumps({"round": round_number, "responses": merged})
    await store.put_result(job_id, TASK_INPUT_ANSWERS, "application/json", document)
    return True


async def _read(store: Readable, job_id: str, name: str) -> dict[str, Any] | None:
    found = await store.get_result(job_id, name)
    if found is None:
        return None
    document = orjson.loads(found[1])
    return document if isinstance(document, dict) else None
