"""Real servers, driven by the official Python SDK client, recorded by `herald record` (stdio and
HTTP) and by herald's own `--message-log`, lint clean.

The servers: GiftGenius (herald), and one small server written with the official SDK and
with FastMCP (`other_servers.py`). Each is driven through a typical session in both the
handshake era and 2026-07-28 where the server speaks it: tools listed and called (one
with progress), a resource read, a prompt, and for GiftGenius a bulk job followed to its
end. Whatever the linter says about a server that is not herald's is written down in
`KNOWN` with why it is true; anything else fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from herald.lint import Finding, lint_file
from herald.testing import free_port
from tests.servers import REPO, listening
from tests.wire.recording import HERALD, recorded_http, valid_records

pytestmark = pytest.mark.slow  # real server processes, recorded

TIMEOUT = 60.0
OTHER_SERVERS = Path(__file__).parents[1] / "wire" / "other_servers.py"
GIFTGENIUS = [sys.executable, "-m", "giftgenius", "serve", "--quiet", "--store", "memory"]
CSV = "name,department,interests,budget\nAna,Eng,hiking;coffee,40\nBo,Ops,board games,60\n"
ERAS = {"handshake": "legacy", "modern": "auto"}

#: Findings the linter rightly makes about servers that are not herald's: (server, rule) -> why.
KNOWN: dict[tuple[str, str], str] = {}


def findings(log: Path) -> list[Finding]:
    found: list[Finding] = []
    lint_file(log, found.append)
    return found


def unexplained(server: str, log: Path) -> list[str]:
    return [
        f"{finding.line}: {finding.rule_id}: {finding.message} {finding.excerpt}"
        for finding in findings(log)
        if (server, finding.rule_id) not in KNOWN
    ]


# -- sessions ----------------------------------------------------------------------------------


async def small_session(client: Client) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert {"echo", "add", "count"} <= tools
    assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
    assert not (await client.call_tool("add", {"a": 2, "b": 3})).is_error
    steps: list[float] = []

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    await client.call_tool("count", {"steps": 3}, progress_callback=progressed)
    assert steps == [1, 2, 3]
    assert (await client.read_resource("recorded://greeting")).contents
    assert (await client.get_prompt("thank", {"name": "Ana"})).messages


async def giftgenius_session(client: Client) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert {"suggest_gifts", "start_bulk_gift_analysis", "get_job_status"} <= tools
    suggested = await client.call_tool(
        "suggest_gifts", {"occasion": "birthday", "budget": 60, "recipient": "friend who loves board games"}
    )
    assert not suggested.is_error
    refused = await client.call_tool(
        "suggest_gifts", {"occasion": "birthday", "budget": 0.5, "recipient": "x"}
    )
    assert refused.is_error
    assert (await client.read_resource("giftgenius://catalog")).contents
    assert (
        await client.get_prompt("gift_congrats_style", {"recipient_name": "Ana", "occasion": "birthday"})
    ).messages
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": CSV})
    assert started.structured_content is not None
    job_id, cursor = started.structured_content["jobId"], None
    async with asyncio.timeout(TIMEOUT):
        while True:
            arguments = {"jobId": job_id} | ({"cursor": cursor} if cursor else {})
            status = (await client.call_tool("get_job_status", arguments)).structured_content
            assert status is not None
            cursor = status["nextCursor"]
            if status["pollAfterMs"] is None:
                break
            await asyncio.sleep(status["pollAfterMs"] / 1000)
    assert status["status"] == "completed"


SESSIONS = {"giftgenius": giftgenius_session, "sdk": small_session, "fastmcp": small_session}


def stdio_command(server: str) -> list[str]:
    if server == "giftgenius":
        return [*GIFTGENIUS, "--stdio"]
    return [sys.executable, str(OTHER_SERVERS), server]


@contextlib.contextmanager
def http_server(server: str, *options: str) -> Iterator[str]:
    port = free_port()
    if server == "giftgenius":
        argv = [*GIFTGENIUS, "--port", str(port), *options]
    else:
        argv = [sys.executable, str(OTHER_SERVERS), server, "--http", "--port", str(port)]
    with listening(argv, port):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.asynccontextmanager
async def over_stdio(argv: list[str], era: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=REPO)
    async with Client(params, mode=ERAS[era], read_timeout_seconds=TIMEOUT, cache=None) as client:
        yield client


@contextlib.asynccontextmanager
async def over_http(url: str, era: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(TIMEOUT)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=ERAS[era], read_timeout_seconds=TIMEOUT, cache=None) as client:
            yield client


def eras_of(server: str) -> list[str]:
    """The SDK and FastMCP servers speak the handshake era only; `auto` falls back to it."""
    return list(ERAS) if server == "giftgenius" else ["handshake"]


CASES = [(server, era) for server in SESSIONS for era in eras_of(server)]


@pytest.mark.parametrize(("server", "era"), CASES)
async def test_recorded_over_stdio_lints_clean(tmp_path: Path, server: str, era: str) -> None:
    log = tmp_path / "wire.jsonl"
    argv = [*HERALD, "record", "-o", str(log), "--", *stdio_command(server)]
    async with asyncio.timeout(TIMEOUT * 2), over_stdio(argv, era) as client:
        await SESSIONS[server](client)
    records = valid_records(log)
    assert sum(record["kind"] == "message" for record in records) > 10
    assert unexplained(server, log) == []


@pytest.mark.parametrize(("server", "era"), CASES)
async def test_recorded_over_http_lints_clean(tmp_path: Path, server: str, era: str) -> None:
    log = tmp_path / "wire.jsonl"
    with http_server(server) as upstream, recorded_http(log, upstream) as url:
        async with asyncio.timeout(TIMEOUT * 2), over_http(url, era) as client:
            await SESSIONS[server](client)
    records = valid_records(log)
    assert any(record.get("stream", "").startswith("post-") for record in records)
    assert unexplained(server, log) == []


@pytest.mark.parametrize("era", list(ERAS))
async def test_giftgenius_own_message_log_over_stdio_lints_clean(tmp_path: Path, era: str) -> None:
    log = tmp_path / "own.jsonl"
    async with (
        asyncio.timeout(TIMEOUT * 2),
        over_stdio([*stdio_command("giftgenius"), "--message-log", str(log)], era) as client,
    ):
        await giftgenius_session(client)
    records = valid_records(log)
    assert records[0]["kind"] == "start"
    assert unexplained("giftgenius", log) == []


@pytest.mark.parametrize("era", list(ERAS))
async def test_giftgenius_own_message_log_over_http_lints_clean(tmp_path: Path, era: str) -> None:
    log = tmp_path / "own.jsonl"
    with http_server("giftgenius", "--message-log", str(log)) as url:
        async with asyncio.timeout(TIMEOUT * 2), over_http(url, era) as client:
            await giftgenius_session(client)
    records = valid_records(log)
    assert records[0]["kind"] == "start"
    assert records[-1]["kind"] != "start", "the server wrote its log before it stopped"
    assert unexplained("giftgenius", log) == []


def test_the_proxy_and_the_server_record_the_same_messages(tmp_path: Path) -> None:
    """Through the HTTP recorder and in the server's own log, one session is the same messages."""
    proxy_log, own_log = tmp_path / "proxy.jsonl", tmp_path / "own.jsonl"

    async def session(url: str) -> None:
        async with asyncio.timeout(TIMEOUT), over_http(url, "handshake") as client:
            await client.call_tool(
                "suggest_gifts", {"occasion": "birthday", "budget": 30, "recipient": "a reader"}
            )

    with (
        http_server("giftgenius", "--message-log", str(own_log)) as upstream,
        recorded_http(proxy_log, upstream) as url,
    ):
        asyncio.run(session(url))

    def messages(log: Path) -> list[Any]:
        return [
            json.dumps(record["message"], sort_keys=True)
            for record in valid_records(log)
            if record["kind"] == "message"
        ]

    assert messages(proxy_log) == messages(own_log)
    assert len(messages(own_log)) >= 4
