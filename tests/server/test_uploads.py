"""A file a widget sends to a job in parts: kept beside the job, received in order, checked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from herald import JobContext, JobFailure, Server, Upload
from herald.server.uploads import PART_BYTES, SEND_PART_TOOL, UploadFailed, encoded_parts, receive_upload
from herald.testing import InMemoryClient, connect
from herald.testing.jobs import job_ended

DATA = bytes(range(256)) * (PART_BYTES // 256 * 2 + 3)  # two whole parts and a short third


def uploading_server(stall_seconds: float = 10.0, max_bytes: int = 10 * PART_BYTES) -> Server:
    server = Server("uploads")

    @server.job
    async def take_file(ctx: JobContext, upload: Upload) -> dict[str, Any]:
        """Receive a file and say what came."""
        seen: list[tuple[int, int]] = []

        async def progress(received: int, total: int) -> None:
            seen.append((received, total))

        try:
            data = await receive_upload(
                ctx, upload, progress, max_bytes=max_bytes, stall_seconds=stall_seconds
            )
        except UploadFailed as failed:
            raise JobFailure(failed.code, failed.message, failed.hint) from None
        return {"same": data == DATA, "progress": seen}

    return server


async def follow(server: Server, client: InMemoryClient, job_id: str) -> dict[str, Any]:
    """How the job ended, as `get_job_status` tells it, once it has."""
    async with asyncio.timeout(30):
        await job_ended(server, job_id)
    return dict((await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"])


async def start(client: InMemoryClient, size: int = len(DATA)) -> str:
    started = await client.call_tool("take_file", {"upload": {"size": size, "file_name": "a.bin"}})
    return str(started["structuredContent"]["jobId"])


@pytest.mark.parametrize("modern", [False, True])
async def test_parts_sent_in_any_order_arrive_whole_with_progress(modern: bool) -> None:
    server = uploading_server()
    async with connect(server, modern=modern) as client:
        tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
        assert tools[SEND_PART_TOOL]["_meta"]["ui"]["visibility"] == ["app"]
        job_id = await start(client)
        for part in reversed(list(encoded_parts(DATA))):
            sent = await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **part})
            assert not sent.get("isError"), sent
        status = await follow(server, client, job_id)
        assert status["status"] == "completed", status.get("error")
        result = await client.request("resources/read", {"uri": status["resultResourceId"]})
    document = result["contents"][0]["text"]
    assert '"same":true' in document
    assert f"[{len(DATA)},{len(DATA)}]" in document


async def test_a_part_that_does_not_fit_the_file_is_refused_and_changes_nothing() -> None:
    server = uploading_server()
    async with connect(server) as client:
        job_id = await start(client)
        parts = list(encoded_parts(DATA))
        cases = [
            ({"index": 3, "data": parts[0]["data"]}, "there is no part 3"),
            ({"index": 0, "data": parts[2]["data"]}, f"must hold {PART_BYTES} bytes"),
            ({"index": 2, "data": "not base64!"}, "not valid base64"),
        ]
        for arguments, said in cases:
            answer = await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **arguments})
            assert answer["isError"] is True
            assert said in answer["content"][0]["text"]
        for part in parts:
            await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **part})
        status = await follow(server, client, job_id)
        assert status["status"] == "completed"
        late = await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **parts[0]})
        assert late["isError"] is True
        assert "is completed; it takes no more of the file" in late["content"][0]["text"]
        unknown = await client.request_raw(
            "tools/call", {"name": SEND_PART_TOOL, "arguments": {"jobId": "nope", **parts[0]}}
        )
        assert "Unknown job" in unknown["error"]["message"]


async def test_a_sender_that_stops_fails_the_job_with_what_to_do() -> None:
    server = uploading_server(stall_seconds=0.3)
    async with connect(server) as client:
        job_id = await start(client)
        await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **next(encoded_parts(DATA))})
        status = await follow(server, client, job_id)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "upload_stalled"
    assert "pick the file again" in status["error"]["hint"]


async def test_a_file_over_the_limit_fails_at_once_and_its_parts_are_refused() -> None:
    server = uploading_server(max_bytes=PART_BYTES)
    async with connect(server) as client:
        job_id = await start(client)
        status = await follow(server, client, job_id)
        assert status["status"] == "failed"
        assert status["error"]["code"] == "file_too_large"
        refused = await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **next(encoded_parts(DATA))})
    assert refused["isError"] is True


async def test_a_job_without_a_file_in_parts_takes_none() -> None:
    server = uploading_server()

    @server.job
    async def plain(ctx: JobContext) -> str:
        """No file here."""
        return "done"

    async with connect(server) as client:
        started = await client.call_tool("plain", {})
        job_id = started["structuredContent"]["jobId"]
        answer = await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **next(encoded_parts(DATA))})
    assert answer["isError"] is True
    assert "takes no file in parts" in answer["content"][0]["text"]
