"""Files a host attaches: declared for ChatGPT (`openai/fileParams`), fetched with care."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from herald import Server
from herald.server.files import DownloadFailed, DownloadPolicy, FileRef, download
from herald.testing import connect
from tests.file_host import FileHost, file_host

PEOPLE = b"name,department,interests,budget\nAda,R&D,tea;hiking,40\n"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[FileHost]:
    async with file_host(tmp_path, {"people.csv": PEOPLE}) as found:
        yield found


def policy(host: FileHost, **changes: object) -> DownloadPolicy:
    return dataclasses.replace(DownloadPolicy(allow_loopback=True, verify=host.trust), **changes)  # type: ignore[arg-type]


def ref(url: str) -> FileRef:
    return FileRef(download_url=url, file_id="file-1")


async def test_a_tool_declares_its_file_parameters_for_the_host() -> None:
    server = Server("files")

    @server.tool
    async def count_lines(table: FileRef, note: str = "") -> int:
        return 0

    async with connect(server) as client:
        (tool,) = (await client.request("tools/list"))["tools"]
    assert tool["_meta"]["openai/fileParams"] == ["table"]
    fields = tool["inputSchema"]["$defs"]["FileRef"]["properties"]
    assert {"download_url", "file_id", "mime_type", "file_name"} <= set(fields)


async def test_a_file_downloads_with_its_progress(host: FileHost) -> None:
    seen: list[tuple[int, int | None]] = []

    async def progress(received: int, total: int | None) -> None:
        seen.append((received, total))

    data = await download(ref(host.link("/files/people.csv")), policy(host), progress)
    assert data == PEOPLE
    assert seen[-1] == (len(PEOPLE), len(PEOPLE))


@pytest.mark.parametrize(
    ("path", "changes", "code", "said"),
    [
        ("/expired", {}, "file_link_expired", "no longer works (HTTP 403)"),
        ("/files/people.csv", {"max_bytes": 10}, "file_too_large", "larger than this server takes"),
        ("/endless", {"max_bytes": 100_000}, "file_too_large", "larger than this server takes"),
        ("/trickle", {"read_timeout": 2.0, "total_timeout": 1.0}, "download_timed_out", "longer than 1 s"),
        ("/files/people.csv", {"allow_loopback": False}, "file_link_refused", "the server's own machine"),
    ],
)
async def test_links_that_fail_say_why_in_words_a_model_can_act_on(
    host: FileHost, path: str, changes: dict[str, object], code: str, said: str
) -> None:
    with pytest.raises(DownloadFailed) as failed:
        await download(ref(host.link(path)), policy(host, **changes))
    assert failed.value.code == code
    assert said in failed.value.message
    assert "the user" in failed.value.hint, "what the model can do about it"


async def test_a_redirect_to_the_servers_own_machine_is_refused(host: FileHost) -> None:
    if host.address is None:
        pytest.fail("this machine has no network address besides loopback")
    # A company file store on the private network is allowed; this machine is not.
    allowed = policy(host, allow_loopback=False, allow_private=True)
    assert await download(ref(host.link("/files/people.csv", host.address)), allowed) == PEOPLE
    with pytest.raises(DownloadFailed) as failed:
        await download(ref(host.link("/home?to=/files/people.csv", host.address)), allowed)
    assert failed.value.code == "file_link_refused"
    assert "127.0.0.1" in failed.value.message


async def test_plain_http_is_fetched_from_loopback_only() -> None:
    with pytest.raises(DownloadFailed) as failed:
        await download(ref("http://192.0.2.10/people.csv"), DownloadPolicy(allow_private=True))
    assert failed.value.code == "file_link_refused"
    assert "only https" in failed.value.message
