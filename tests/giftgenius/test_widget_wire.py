"""The GiftGenius widget as hosts meet it: over stdio and HTTP, in both eras, from a real server."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import orjson
import pytest

from giftgenius.app import gifts_widget
from herald.client import Client, connect_http, connect_stdio
from herald.server.widgets import UI_MIME_TYPE
from tests.servers import giftgenius_http

DOMAIN = "https://gifts.example.com"
CSV = "name,department,interests,budget\nAda,Engineering,board games;coffee,60\nLin,Sales,gardening,\n"


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("widget") / "gifts.db"
    with giftgenius_http(f"sqlite:///{store}", "--widget-domain", DOMAIN) as served:
        yield served.url


STDIO = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]
STDIO += ["--widget-domain", DOMAIN]


@pytest.fixture(
    params=[("stdio", False), ("stdio", True), ("http", False), ("http", True)],
    ids=["stdio-handshake", "stdio-modern", "http-handshake", "http-modern"],
)
async def client(request: pytest.FixtureRequest, http_url: str) -> AsyncIterator[Client]:
    transport, modern = request.param
    connection: AbstractAsyncContextManager[Client] = (
        connect_stdio(STDIO, modern) if transport == "stdio" else connect_http(http_url, modern)
    )
    async with connection as connected:
        yield connected


async def test_tools_point_at_the_widget_in_both_vocabularies(client: Client) -> None:
    uri = gifts_widget(DOMAIN).uri("giftgenius")
    tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    for name in ("suggest_gifts", "start_bulk_gift_analysis"):
        meta = tools[name]["_meta"]
        assert meta["ui"]["resourceUri"] == meta["openai/outputTemplate"] == uri
        assert 0 < len(meta["openai/toolInvocation/invoking"]) <= 64
        assert 0 < len(meta["openai/toolInvocation/invoked"]) <= 64
    for name in ("get_job_status", "cancel_job"):
        assert tools[name]["_meta"]["ui"]["visibility"] == ["model", "app"]
        assert tools[name]["_meta"]["openai/widgetAccessible"] is True
    private = tools["get_job_result"]["_meta"]
    assert private["ui"]["visibility"] == ["app"]
    assert private["openai/visibility"] == "private"
    assert private["openai/widgetAccessible"] is True


async def test_the_widget_is_one_self_contained_document(client: Client) -> None:
    uri = gifts_widget(DOMAIN).uri("giftgenius")
    listed = {entry["uri"]: entry for entry in (await client.request("resources/list"))["resources"]}
    assert listed[uri]["mimeType"] == UI_MIME_TYPE
    content = (await client.request("resources/read", {"uri": uri}))["contents"][0]
    assert content["mimeType"] == UI_MIME_TYPE
    assert content["_meta"]["ui"] == {
        "csp": {"connectDomains": [], "resourceDomains": []},
        "prefersBorder": True,
        "domain": DOMAIN,
    }
    assert content["_meta"]["openai/widgetDomain"] == DOMAIN
    assert content["_meta"]["openai/widgetCSP"] == {"connect_domains": [], "resource_domains": []}
    assert content["_meta"]["openai/widgetDescription"]
    html: str = content["text"]
    assert html.lstrip().lower().startswith("<!doctype html>")
    lowered = html.lower()
    for external in ("<script src", "<link ", "@import", "url(http", 'src="http'):
        assert external not in lowered, f"the widget loads something from outside: {external}"


async def test_results_make_sense_without_the_widget(client: Client) -> None:
    result = await client.call_tool(
        "suggest_gifts", {"occasion": "birthday", "budget": 80, "recipient": "loves board games"}
    )
    assert result["structuredContent"]["gifts"]
    assert result["structuredContent"]["gifts"][0]["name"] in result["content"][0]["text"]


async def test_a_widget_can_fetch_a_job_result_without_reading_resources(client: Client) -> None:
    started = await client.call_tool("start_bulk_gift_analysis", {"csv": CSV, "occasion": "birthday"})
    job_id = started["structuredContent"]["jobId"]
    async for event in client.job_events(job_id):
        if event.kind in ("completed", "failed", "cancelled"):
            assert event.kind == "completed"
            break
    fetched = await client.call_tool("get_job_result", {"jobId": job_id})
    assert "isError" not in fetched
    document = fetched["structuredContent"]
    assert [person["name"] for person in document["people"]] == ["Ada", "Lin"]
    read = await client.request("resources/read", {"uri": f"herald://jobs/{job_id}/result.json"})
    assert orjson.loads(read["contents"][0]["text"]) == document


async def test_a_job_that_has_not_completed_has_no_result_yet(client: Client) -> None:
    started = await client.call_tool(
        "start_bulk_gift_analysis", {"csv": "not,a,csv\n", "occasion": "birthday"}
    )
    job_id = started["structuredContent"]["jobId"]
    async for event in client.job_events(job_id):
        if event.kind in ("completed", "failed", "cancelled"):
            break
    fetched = await client.call_tool("get_job_result", {"jobId": job_id})
    assert fetched["isError"] is True
    assert job_id in fetched["content"][0]["text"]


def test_pages_of_local_hosts_may_call_the_server(http_url: str) -> None:
    origin = "http://127.0.0.1:5173"
    preflight = httpx.options(
        http_url,
        headers={
            "origin": origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, mcp-session-id, mcp-protocol-version",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == origin
    assert "mcp-session-id" in preflight.headers["access-control-allow-headers"].lower()
    answered = httpx.post(http_url, headers=_post_headers(origin), content=_initialize())
    assert answered.status_code == 200
    assert answered.headers["access-control-allow-origin"] == origin
    assert "mcp-session-id" in answered.headers["access-control-expose-headers"].lower()


def test_pages_of_other_sites_get_no_cors_and_are_refused(http_url: str) -> None:
    origin = "https://evil.example"
    preflight = httpx.options(http_url, headers={"origin": origin, "access-control-request-method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    refused = httpx.post(http_url, headers=_post_headers(origin), content=_initialize())
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers


def _post_headers(origin: str) -> dict[str, str]:
    return {
        "origin": origin,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }


def _initialize() -> bytes:
    params: dict[str, Any] = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"},
    }
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
