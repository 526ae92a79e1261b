"""The employee file as a widget sends it where hosts attach no files: in parts, after the start."""

from __future__ import annotations

import orjson
import pytest

from giftgenius.app import build_server
from herald.server.files import DownloadPolicy
from herald.server.uploads import SEND_PART_TOOL, encoded_parts
from herald.testing import connect
from tests.giftgenius.test_bulk_job import GOOD, follow


@pytest.mark.parametrize("modern", [False, True])
async def test_a_file_sent_in_parts_is_received_as_the_jobs_first_stage(modern: bool) -> None:
    data = GOOD.encode()
    async with connect(build_server(), modern=modern) as client:
        form = await client.call_tool("open_bulk_gift_form", {"occasion": "birthday"})
        assert form["structuredContent"]["form"] == "bulk"
        assert form["structuredContent"]["occasion"] == "birthday"
        upload = {"size": len(data), "file_name": "people.csv", "mime_type": "text/csv"}
        started = await client.call_tool(
            "start_bulk_gift_analysis", {"upload": upload, "occasion": "birthday"}
        )
        job_id = started["structuredContent"]["jobId"]
        for part in encoded_parts(data):
            await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **part})
        status = await follow(client, job_id)
        assert status["status"] == "completed", status.get("error")
        stages = [event["stage"] for event in status["events"] if event["type"] == "job.progress"]
        assert stages[0] == "receiving the file"
        assert stages[1].startswith("receiving the file: 0.0 MB of 0.0 MB"), stages
        read = await client.request("resources/read", {"uri": status["resultResourceId"]})
    assert [person["name"] for person in orjson.loads(read["contents"][0]["text"])["people"]] == ["Ada", "Cy"]


async def test_a_file_over_the_servers_limit_fails_before_any_part_is_kept() -> None:
    server = build_server(downloads=DownloadPolicy(max_bytes=1_000_000))
    async with connect(server) as client:
        started = await client.call_tool("start_bulk_gift_analysis", {"upload": {"size": 40_000_000}})
        status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "failed"
    assert status["error"]["code"] == "file_too_large"
    assert "up to 1 MB" in status["error"]["message"]


async def test_a_workbook_sent_in_parts_is_refused_as_the_csv_rules_say() -> None:
    data = b"PK\x03\x04rest of a workbook"
    async with connect(build_server()) as client:
        upload = {"size": len(data), "file_name": "book.xlsx"}
        started = await client.call_tool("start_bulk_gift_analysis", {"upload": upload})
        job_id = started["structuredContent"]["jobId"]
        for part in encoded_parts(data):
            await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **part})
        status = await follow(client, job_id)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "not_csv"
    assert "book.xlsx" in status["error"]["message"]
