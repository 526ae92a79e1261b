"""The official MCP Python SDK client talks Streamable HTTP to real server processes.

Two servers run as subprocesses on free loopback ports, each for the whole module:

* ``giftgenius serve`` (the reference app, in-memory event store);
* a small herald server written by this module to a temporary file, whose tools report
  progress (``steps``) and end their SSE stream half-way through (``interrupted``).

Every exchange runs once per protocol era:

* ``handshake``: ``mode="legacy"``, the ``initialize`` handshake and an ``Mcp-Session-Id`` session;
* ``modern``: ``mode="auto"``, the SDK probes ``server/discover`` and lands on the stateless
  2026-07-28 era, where every POST stands on its own.

Stream resumption is a handshake-era feature (2026-07-28 streams are not stored), so it is
checked there only: once through the SDK, which reconnects with ``Last-Event-ID`` by itself
when the server ends the stream before the result, and once on the wire with raw httpx.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent, TextResourceContents

from herald.testing import free_port
from tests.servers import stop

pytestmark = pytest.mark.slow  # the official SDKs' clients against real server processes

REPO_ROOT = Path(__file__).resolve().parents[2]
GIFTGENIUS = Path(sys.executable).with_name("giftgenius")
TIMEOUT_SECONDS = 30.0
STARTUP_SECONDS = 20.0

HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"

CATALOG_URI = "giftgenius://catalog"
RECIPIENT = "friend who loves board games"
STEPS = 12

ERAS = {
    "handshake": "legacy",
    "modern": "auto",
}

#: The progress server: herald's public API only, the way a server author writes it.
PROGRESS_SERVER = textwrap.dedent(
    '''
    """Tools that report progress, and one that ends its HTTP stream half-way (SEP-1699)."""

    import sys

    from herald import Context, Server
    from herald.transports.http import run_http

    server = Server("progress-demo")


    @server.tool
    async def steps(count: int, ctx: Context) -> str:
        """Report progress `count` times, then finish."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count)
        return f"done {count}"


    @server.tool
    async def interrupted(ctx: Context) -> str:
        """Report, end the stream, then finish while nobody listens."""
        await ctx.report_progress(1, 2)
        ctx.close_stream()
        await ctx.report_progress(2, 2)
        return "finished after the stream closed"


    if __name__ == "__main__":
        run_http(server, host="127.0.0.1", port=int(sys.argv[1]))
    '''
)


# -- servers --------------------------------------------------------------------------------------


def wait_until_listening(process: subprocess.Popen[bytes], port: int, errors: Path) -> None:
    """Block until `port` accepts connections, the process dies, or STARTUP_SECONDS pass."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {errors.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on port {port} after {STARTUP_SECONDS}s") from None
            time.sleep(0.05)  # polling a condition with a deadline, not hiding a race


def serve(command: list[str], port: int, errors: Path) -> Iterator[str]:
    """Run `command` as a subprocess serving MCP on `port`; yield its endpoint, then stop it."""
    with errors.open("wb") as stderr:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_until_listening(process, port, errors)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process, timeout=10)


@pytest.fixture(scope="module")
def giftgenius_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    errors = tmp_path_factory.mktemp("giftgenius") / "stderr.log"
    port = free_port()
    command = [str(GIFTGENIUS), "serve", "--host", "127.0.0.1", "--port", str(port), "--store", "memory"]
    yield from serve([*command, "--quiet"], port, errors)


@pytest.fixture(scope="module")
def progress_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("progress_server")
    script = folder / "progress_server.py"
    script.write_text(PROGRESS_SERVER)
    port = free_port()
    yield from serve([sys.executable, str(script), str(port)], port, folder / "stderr.log")


@pytest.fixture(params=list(ERAS), ids=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


# -- the SDK client ---------------------------------------------------------------------------------


@dataclass
class WireLog:
    """The HTTP requests the SDK made: method and the headers that matter here."""

    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    async def record(self, request: httpx2.Request) -> None:
        wanted = ("mcp-session-id", "last-event-id", "mcp-protocol-version")
        self.requests.append(
            (request.method, {name: request.headers[name] for name in wanted if name in request.headers})
        )

    def gets(self) -> list[dict[str, str]]:
        return [headers for method, headers in self.requests if method == "GET"]


@asynccontextmanager
async def connect(url: str, era: str, wire: WireLog | None = None) -> AsyncIterator[Client]:
    """Connect the SDK client to `url` in `era`, recording its HTTP requests in `wire`."""
    hooks = {"request": [wire.record]} if wire is not None else {}
    timeout = httpx2.Timeout(TIMEOUT_SECONDS)
    async with httpx2.AsyncClient(timeout=timeout, event_hooks=hooks) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport, mode=ERAS[era], read_timeout_seconds=TIMEOUT_SECONDS, cache=None
        ) as client:
            expected = HANDSHAKE_VERSION if era == "handshake" else MODERN_VERSION
            assert client.protocol_version == expected
            yield client


def only_text(blocks: list[Any]) -> str:
    """The text of a result's content, which must be text blocks only."""
    assert blocks, "the result has no content"
    assert all(isinstance(block, TextContent) for block in blocks), blocks
    return "\n".join(block.text for block in blocks)


async def read_catalog(client: Client) -> dict[str, Any]:
    result = await client.read_resource(CATALOG_URI)
    assert len(result.contents) == 1, result.contents
    part = result.contents[0]
    assert isinstance(part, TextResourceContents), part
    assert part.uri == CATALOG_URI
    assert part.mime_type == "application/json"
    catalog = json.loads(part.text)
    assert isinstance(catalog, dict), catalog
    return catalog


@dataclass
class ProgressLog:
    """Progress notifications as the SDK hands them to the `call_tool` callback, in arrival order."""

    seen: list[tuple[float, float | None]] = field(default_factory=list)

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total))


# -- GiftGenius, both eras -----------------------------------------------------------------------


async def test_list_tools(giftgenius_url: str, era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(giftgenius_url, era) as client:
        listing = await client.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert "suggest_gifts" in tools, sorted(tools)
    schema = tools["suggest_gifts"].input_schema
    assert schema["type"] == "object"
    assert {"occasion", "budget", "recipient", "count"} <= set(schema["properties"])
    assert set(schema["required"]) == {"occasion", "budget", "recipient"}
    output = tools["suggest_gifts"].output_schema
    assert output is not None
    assert "gifts" in output["properties"]


async def test_suggest_gifts_within_budget(giftgenius_url: str, era: str) -> None:
    budget = 40
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(giftgenius_url, era) as client:
        result = await client.call_tool(
            "suggest_gifts", {"occasion": "birthday", "budget": budget, "recipient": RECIPIENT, "count": 5}
        )
        catalog = await read_catalog(client)
    assert not result.is_error, result
    assert only_text(result.content).strip()
    structured = result.structured_content
    assert isinstance(structured, dict), structured
    gifts = structured["gifts"]
    assert 1 <= len(gifts) <= 5, gifts
    prices = {item["name"]: item["price"] for item in catalog["items"]}
    for gift in gifts:
        assert gift["price"] <= budget, gift
        assert prices[gift["name"]] == gift["price"], gift


async def test_a_url_with_a_trailing_slash_is_served_without_a_redirect(
    giftgenius_url: str, era: str
) -> None:
    """The SDK follows a 307 by itself; other clients do not, so the server answers `/mcp/` itself."""
    paths: list[str] = []

    async def record(response: httpx2.Response) -> None:
        paths.append(f"{response.request.method} {response.request.url.path} {response.status_code}")

    async with (
        asyncio.timeout(TIMEOUT_SECONDS),
        httpx2.AsyncClient(
            timeout=httpx2.Timeout(TIMEOUT_SECONDS), event_hooks={"response": [record]}
        ) as http,
        Client(
            streamable_http_client(giftgenius_url + "/", http_client=http),
            mode=ERAS[era],
            read_timeout_seconds=TIMEOUT_SECONDS,
            cache=None,
        ) as client,
    ):
        result = await client.call_tool(
            "suggest_gifts", {"occasion": "birthday", "budget": 40, "recipient": RECIPIENT}
        )
    assert not result.is_error, result
    assert paths, "no request was made"
    assert all(" /mcp/ " in path and not path.endswith(" 307") for path in paths), paths


async def test_read_catalog(giftgenius_url: str, era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(giftgenius_url, era) as client:
        listing = await client.list_resources()
        catalog = await read_catalog(client)
    resources = {resource.name: resource for resource in listing.resources}
    assert "gift_catalog" in resources, sorted(resources)
    assert resources["gift_catalog"].uri == CATALOG_URI
    items = catalog["items"]
    assert len(items) >= 300
    assert len({item["name"] for item in items}) == len(items)


async def test_widget_metadata_and_document(giftgenius_url: str, era: str) -> None:
    """What an MCP Apps host built on the SDK reads: the tool's resourceUri, then the document."""
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(giftgenius_url, era) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        suggest_meta = tools["suggest_gifts"].meta or {}
        uri = suggest_meta["ui"]["resourceUri"]
        read = await client.read_resource(uri)
        nothing_fits = await client.call_tool(
            "suggest_gifts", {"occasion": "birthday", "budget": 1, "recipient": RECIPIENT}
        )
    assert uri.startswith("ui://giftgenius/")
    assert suggest_meta["openai/outputTemplate"] == uri
    assert (tools["get_job_result"].meta or {})["ui"]["visibility"] == ["app"]
    part = read.contents[0]
    assert isinstance(part, TextResourceContents), part
    assert part.mime_type == "text/html;profile=mcp-app"
    assert part.text.lstrip().lower().startswith("<!doctype html>")
    assert (part.meta or {})["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}
    # A business error whose structured twin the SDK checks against the tool's outputSchema.
    assert nothing_fits.is_error
    assert nothing_fits.structured_content == {"gifts": [], "notice": only_text(nothing_fits.content)}


async def test_get_prompt(giftgenius_url: str, era: str) -> None:
    name = "Marguerite"
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(giftgenius_url, era) as client:
        prompt = await client.get_prompt(
            "gift_congrats_style", {"recipient_name": name, "occasion": "birthday", "tone": "warm"}
        )
    assert prompt.messages
    assert name in only_text([message.content for message in prompt.messages])


# -- progress and resumption ----------------------------------------------------------------------


async def test_progress_arrives_in_order_before_the_result(progress_url: str, era: str) -> None:
    progress = ProgressLog()
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(progress_url, era) as client:
        result = await client.call_tool("steps", {"count": STEPS}, progress_callback=progress)
        # Taken the moment the result is back, before anything else can run.
        at_result = list(progress.seen)
    assert not result.is_error, result
    assert only_text(result.content) == f"done {STEPS}"
    assert at_result == [(float(step), float(STEPS)) for step in range(1, STEPS + 1)]


async def test_sdk_resumes_an_interrupted_stream(progress_url: str) -> None:
    """The server ends the POST's stream after the first progress; the SDK resumes it on its own."""
    progress = ProgressLog()
    wire = WireLog()
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(progress_url, "handshake", wire) as client:
        result = await client.call_tool("interrupted", {}, progress_callback=progress)
        at_result = list(progress.seen)
    assert not result.is_error, result
    assert only_text(result.content) == "finished after the stream closed"
    # Both progress notifications arrived, the second one only through the resumed stream.
    assert at_result == [(1.0, 2.0), (2.0, 2.0)]
    # The SDK got there by a GET naming its session and the last event it saw.
    resumed = [headers for headers in wire.gets() if "last-event-id" in headers]
    assert len(resumed) == 1, wire.requests
    assert resumed[0]["mcp-session-id"]
    assert resumed[0]["mcp-protocol-version"] == HANDSHAKE_VERSION


# -- the same resumption on the wire ----------------------------------------------------------------

SSE_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class Event:
    id: str | None
    data: str
    retry: int | None


async def read_events(response: httpx.Response) -> list[Event]:
    """Every SSE event of `response`, until the server ends it (comments are skipped)."""
    assert response.status_code == 200, response.status_code
    assert response.headers["content-type"].startswith("text/event-stream"), response.headers
    events: list[Event] = []
    fields: dict[str, str] = {}
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if fields or data:
                retry = fields.get("retry")
                events.append(Event(fields.get("id"), "\n".join(data), int(retry) if retry else None))
            fields, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
    assert not fields, f"the stream ended inside an event: {fields}"
    return events


def messages(events: list[Event]) -> list[dict[str, Any]]:
    decoded = [json.loads(event.data) for event in events if event.data]
    assert all(isinstance(message, dict) for message in decoded), decoded
    return decoded


async def test_wire_resumption_with_last_event_id(progress_url: str) -> None:
    """POST, read until the server ends the stream, then GET with `Last-Event-ID` for the rest."""
    async with asyncio.timeout(TIMEOUT_SECONDS), httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as http:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "wire-test", "version": "1"},
            },
        }
        answer = await http.post(progress_url, json=initialize, headers=SSE_HEADERS)
        assert answer.status_code == 200, answer.text
        session_id = answer.headers["mcp-session-id"]
        session = {**SSE_HEADERS, "mcp-session-id": session_id, "mcp-protocol-version": HANDSHAKE_VERSION}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(progress_url, json=initialized, headers=session)).status_code == 202

        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "interrupted", "arguments": {}, "_meta": {"progressToken": "p"}},
        }
        async with http.stream("POST", progress_url, json=call, headers=session) as response:
            first = await read_events(response)
        # A priming event (an id, `retry:`, no data), the first progress, then the end: no result yet.
        assert first[0].id is not None
        assert first[0].data == ""
        assert first[0].retry is not None
        assert messages(first) == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": 1, "total": 2},
            }
        ]
        last_id = first[-1].id
        assert last_id is not None

        resume = {
            "accept": "text/event-stream",
            "mcp-session-id": session_id,
            "mcp-protocol-version": HANDSHAKE_VERSION,
            "last-event-id": last_id,
        }
        async with http.stream("GET", progress_url, headers=resume) as response:
            rest = await read_events(response)
    assert all(event.id is not None for event in rest), rest
    assert len({event.id for event in first + rest}) == len(first + rest), "an event was sent twice"
    rest_messages = messages(rest)
    assert rest_messages[0] == {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "p", "progress": 2, "total": 2},
    }
    assert len(rest_messages) == 2, rest_messages
    final = rest_messages[1]
    assert final["id"] == 2, final
    assert final["result"]["content"] == [{"type": "text", "text": "finished after the stream closed"}]
