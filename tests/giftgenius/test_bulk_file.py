"""The employee file as ChatGPT passes an attachment: a link the server downloads, in both eras."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from giftgenius.app import build_server
from herald.server.files import DownloadPolicy
from herald.testing import connect
from tests.file_host import FileHost, file_host
from tests.giftgenius.test_bulk_job import GOOD, follow

LATIN1 = "name,department,interests,budget\nJosé,Ventas,café;tea,30\n".encode("cp1252")


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[FileHost]:
    files = {"people.csv": GOOD.encode(), "latin1.csv": LATIN1, "book.xlsx": b"PK\x03\x04rest of a workbook"}
    async with file_host(tmp_path, files) as found:
        yield found


def attached(host: FileHost, path: str) -> dict[str, str]:
    return {"download_url": host.link(path), "file_id": "file-7", "file_name": path.rpartition("/")[2]}


@pytest.mark.parametrize("modern", [False, True])
async def test_an_attached_file_is_downloaded_as_the_jobs_first_stage(host: FileHost, modern: bool) -> None:
    server = build_server(downloads=DownloadPolicy(allow_loopback=True, verify=host.trust))
    async with connect(server, modern=modern) as client:
        tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
        assert tools["start_bulk_gift_analysis"]["_meta"]["openai/fileParams"] == ["employees_file"]
        arguments = {"employees_file": attached(host, "/files/people.csv"), "occasion": "birthday"}
        started = await client.call_tool("start_bulk_gift_analysis", arguments)
        status = await follow(client, started["structuredContent"]["jobId"])
        assert status["status"] == "completed", status.get("error")
        stages = [event["stage"] for event in status["events"] if event["type"] == "job.progress"]
        assert stages[0] == "downloading the file"
        assert stages[1].startswith("downloading the file: 0.0 MB of 0.0 MB"), stages
        read = await client.request("resources/read", {"uri": status["resultResourceId"]})
    result = orjson.loads(read["contents"][0]["text"])
    assert [person["name"] for person in result["people"]] == ["Ada", "Cy"]


async def test_a_file_in_the_windows_code_page_is_read_as_the_csv_rules_say(host: FileHost) -> None:
    server = build_server(downloads=DownloadPolicy(allow_loopback=True, verify=host.trust))
    async with connect(server) as client:
        arguments = {"employees_file": attached(host, "/files/latin1.csv")}
        status = await follow(
            client,
            (await client.call_tool("start_bulk_gift_analysis", arguments))["structuredContent"]["jobId"],
        )
        assert status["status"] == "completed", status.get("error")
        read = await client.request("resources/read", {"uri": status["resultResourceId"]})
    assert orjson.loads(read["contents"][0]["text"])["people"][0]["name"] == "José"


@pytest.mark.parametrize(
    ("arguments", "code", "said"),
    [
        ({"employees_file": "/expired"}, "file_link_expired", "no longer works"),
        ({"employees_file": "/files/book.xlsx"}, "not_csv", "book.xlsx is a spreadsheet workbook"),
        (
            {"employees_file": "/files/people.csv", "csv": GOOD},
            "bad_input",
            "not csv and employees_file together",
        ),
        ({}, "bad_input", "neither came"),
    ],
)
async def test_a_file_that_cannot_be_used_fails_the_job_with_what_to_do(
    host: FileHost, arguments: dict[str, str], code: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = build_server(downloads=DownloadPolicy(allow_loopback=True, verify=host.trust))
    given: dict[str, object] = dict(arguments)
    if "employees_file" in given:
        given["employees_file"] = attached(host, str(given["employees_file"]))
    with caplog.at_level(logging.WARNING):
        async with connect(server) as client:
            started = await client.call_tool("start_bulk_gift_analysis", given)
            status = await follow(client, started["structuredContent"]["jobId"])
    assert status["status"] == "failed"
    assert status["error"]["code"] == code
    assert said in status["error"]["message"]
    assert status["error"]["hint"]
    assert "Traceback" not in caplog.text
