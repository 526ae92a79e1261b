"""Files a widget sends to a job in parts, after starting it.

MCP Apps hosts pass no files through tool calls, and a tool call is one message, which
hosts and proxies cap in size. So a widget that has a file in hand (picked, or dropped on
it) starts the job with a description of the file, an `Upload` (its size and name), and
then sends the bytes in parts of `PART_BYTES` through `send_job_file_part`, a tool only
widgets see. Each part is kept beside the job in the job store, like its results: any
replica can take a part, any worker can run the job, and a job that resumes elsewhere
reads the same parts again.

The job receives the file as its first stage (`receive_upload`): it takes the parts in
order as they arrive, reporting bytes so far, so the person sees the upload and the work
after it in one progress bar. A sender that stops for `STALL_SECONDS` fails the job with
a reason instead of leaving it waiting forever.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import BaseModel, Field

from herald.content import ToolResult, text
from herald.server.context import Context
from herald.server.specs import tool_spec
from herald.server.widgets import app_only

if TYPE_CHECKING:
    from herald.runtime.context import JobContext
    from herald.server.jobs import JobHost

__all__ = [
    "PART_BYTES",
    "SEND_PART_TOOL",
    "Upload",
    "UploadFailed",
    "accept_uploads",
    "encoded_parts",
    "receive_upload",
]

#: Bytes per part: about 350 KB once base64 puts it in a JSON message, well inside what
#: hosts pass through a tool call, and few enough calls for a 10 MB file (40).
PART_BYTES: Final = 256 * 1024
#: The widget-only tool that takes the parts.
SEND_PART_TOOL: Final = "send_job_file_part"
#: How long a job waits for the next part before it gives up on the sender.
STALL_SECONDS: Final = 60.0
#: How often a job looks in the store for the next part.
LOOK_EVERY_SECONDS: Final = 0.1

Progress = Callable[[int, int], Awaitable[None]]


class Upload(BaseModel):
    """A file the widget sends after the call, in parts: what it says of the file."""

    size: int = Field(ge=1, description="The file's size in bytes (set by the widget that sends it).")
    file_name: str | None = Field(default=None, description="The file's name, if known.")
    mime_type: str | None = Field(default=None, description="The file's media type, if known.")

    @property
    def parts(self) -> int:
        """How many parts the file comes in."""
        return math.ceil(self.size / PART_BYTES)

    def part_size(self, index: int) -> int:
        """How many bytes part `index` holds: `PART_BYTES`, but the last holds the rest."""
        return PART_BYTES if index < self.parts - 1 else self.size - PART_BYTES * (self.parts - 1)


class UploadFailed(Exception):
    """The file did not arrive; `code` says why, `message` and `hint` say it to a person."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def encoded_parts(data: bytes) -> Iterator[dict[str, Any]]:
    """What a sender passes `send_job_file_part` for each part of `data`, besides the job id."""
    for index, start in enumerate(range(0, len(data), PART_BYTES)):
        yield {"index": index, "data": base64.b64encode(data[start : start + PART_BYTES]).decode("ascii")}


def part_name(index: int) -> str:
    """The name a part is kept under beside its job."""
    return f"upload-part-{index:06d}"


async def receive_upload(
    ctx: JobContext,
    upload: Upload,
    progress: Progress | None = None,
    *,
    max_bytes: int,
    stall_seconds: float = STALL_SECONDS,
) -> bytes:
    """The file's bytes, once every part has arrived; `progress(bytes_so_far, size)` is
    awaited as they do. `UploadFailed` for a file over `max_bytes` or a sender that stopped."""
    if upload.size > max_bytes:
        raise UploadFailed(
            "file_too_large",
            f"The file is {upload.size / 1_048_576:.1f} MB; this server takes files up to "
            f"{max_bytes / 1_048_576:.0f} MB.",
            "Ask the user for a smaller file, or split it in two.",
        )
    received: list[bytes] = []
    so_far = 0
    for index in range(upload.parts):
        part = await _next_part(ctx, index, stall_seconds)
        if len(part) != upload.part_size(index):  # the tool checks it; a store is no place to trust
            raise UploadFailed(
                "upload_failed",
                f"Part {index + 1} of the file arrived damaged.",
                "Ask the user to pick the file again.",
            )
        received.append(part)
        so_far += len(part)
        if progress is not None:
            await progress(so_far, upload.size)
    return b"".join(received)


async def _next_part(ctx: JobContext, index: int, stall_seconds: float) -> bytes:
    deadline = time.monotonic() + stall_seconds
    while (part := await ctx.read_result(part_name(index))) is None:
        if time.monotonic() > deadline:
            raise UploadFailed(
                "upload_stalled",
                f"The file stopped arriving: no part came for {stall_seconds:g} s.",
                "Ask the user to pick the file again in the widget.",
            )
        await asyncio.sleep(LOOK_EVERY_SECONDS)
    return part


def accept_uploads(server: JobHost, tool: str, parameter: str) -> None:
    """Let widgets send the file of `tool`'s `parameter` (an `Upload`): add `send_job_file_part`."""
    server.upload_parameters[tool] = parameter
    if SEND_PART_TOOL in server.registry.tools:
        return

    from herald.server.jobs import known_job  # herald.server.jobs imports the server's parts

    async def send_job_file_part(
        ctx: Context,
        job_id: Annotated[str, Field(alias="jobId", description="The job the file is for")],
        index: Annotated[int, Field(ge=0, description="Which part this is, from 0")],
        data: Annotated[
            str, Field(description=f"The part's bytes in base64: {PART_BYTES} bytes, the last the rest")
        ],
    ) -> ToolResult:
        """One part of the file a job waits for, sent by the widget that started the job."""
        job = await known_job(server.jobs, job_id, ctx.principal)
        parameter = server.upload_parameters.get(job.tool)
        described = job.arguments.get(parameter) if parameter is not None else None
        if described is None:
            return _refused(f"Job {job_id} takes no file in parts.")
        if job.terminal:
            return _refused(f"Job {job_id} is {job.status}; it takes no more of the file.")
        upload = Upload.model_validate(described)
        if index >= upload.parts:
            return _refused(
                f"The file comes in {upload.parts} parts, numbered from 0; there is no part {index}."
            )
        try:
            part = base64.b64decode(data, validate=True)
        except binascii.Error:
            return _refused("The part is not valid base64.")
        if len(part) != upload.part_size(index):
            return _refused(
                f"Part {index} must hold {upload.part_size(index)} bytes of the file; it held {len(part)}."
            )
        await server.jobs.put_result(job_id, part_name(index), "application/octet-stream", part)
        return ToolResult(
            [text(f"Part {index + 1} of {upload.parts} received.")],
            structured={"jobId": job_id, "index": index, "parts": upload.parts},
        )

    server.registry.add_tool(
        tool_spec(
            send_job_file_part,
            annotations={"idempotentHint": True, "destructiveHint": False},
            meta=app_only().tool_meta(server.name),
        )
    )


def _refused(message: str) -> ToolResult:
    return ToolResult([text(message)], is_error=True)
