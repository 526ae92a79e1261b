"""The official MCP Python SDK client talks to `giftgenius serve --stdio` as a real subprocess.

Every test runs once per protocol era:

* ``handshake``: ``mode="legacy"``, the ``initialize`` handshake, which must settle on 2025-11-25;
* ``modern``: ``mode="auto"``, the SDK probes ``server/discover`` and must land on the stateless
  2026-07-28 era (no ``initialize`` at all), with the server identity carried by the discover result;
* ``modern-pinned``: the SDK is pinned to 2026-07-28 and sends no ``server/discover`` either, so
  every request stands on its own ``_meta`` envelope.

Expected values are read from the server itself (the catalog resource), never written down here.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters, UriTemplate
from mcp.types import TextContent, TextResourceContents

pytestmark = pytest.mark.slow  # the official SDKs' clients against real server processes

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER_COMMAND = [sys.executable, "-m", "giftgenius", "serve", "--stdio"]
TIMEOUT_SECONDS = 30.0

HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"

CATALOG_URI = "giftgenius://catalog"
CATEGORY_TEMPLATE = "giftgenius://catalog/{category}"
BOARD_GAMES = "board games"
RECIPIENT = "friend who loves board games"
#: From this age a person is an adult to GiftGenius (`giftgenius.suggest`).
ADULT_AGE = 18

ERAS = {
    "handshake": "legacy",
    "modern": "auto",
    "modern-pinned": MODERN_VERSION,
}


@pytest.fixture(params=list(ERAS), ids=list(ERAS))
def era(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@asynccontextmanager
async def connect(era: str) -> AsyncIterator[Client]:
    """Spawn the server and connect the SDK client in `era`, bounded by the caller's timeout."""
    params = StdioServerParameters(command=SERVER_COMMAND[0], args=SERVER_COMMAND[1:], cwd=REPO_ROOT)
    async with Client(params, mode=ERAS[era], read_timeout_seconds=TIMEOUT_SECONDS, cache=None) as client:
        yield client


def only_text(blocks: list[Any]) -> str:
    """The text of a result's content, which must be text blocks only."""
    assert blocks, "the result has no content"
    assert all(isinstance(block, TextContent) for block in blocks), blocks
    return "\n".join(block.text for block in blocks)


async def read_json(client: Client, uri: str) -> Any:
    """Read a one-part JSON text resource and decode it."""
    result = await client.read_resource(uri)
    assert len(result.contents) == 1, result.contents
    part = result.contents[0]
    assert isinstance(part, TextResourceContents), part
    assert part.uri == uri
    assert part.mime_type == "application/json"
    return json.loads(part.text)


async def read_catalog(client: Client) -> dict[str, Any]:
    catalog = await read_json(client, CATALOG_URI)
    assert isinstance(catalog, dict), catalog
    return catalog


def price_text(price: float) -> tuple[str, ...]:
    """The ways a price may reasonably be written: 4.99, 12.00 or 12."""
    return (f"{price:.2f}", f"{price:g}")


async def test_era_is_negotiated(era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        session = client.session
        if era == "modern-pinned":
            # Nothing was exchanged to connect: the SDK adopted the version on its own, so the
            # capabilities are its own placeholder and the server is anonymous until a request.
            assert client.protocol_version == MODERN_VERSION
            assert session.initialize_result is None
            assert client.server_info is None
            return
        if era == "handshake":
            assert client.protocol_version == HANDSHAKE_VERSION
            assert session.initialize_result is not None
            assert session.discover_result is None
        else:
            # The answer to `server/discover` settled the era: it lists 2026-07-28 and no handshake ran.
            assert client.protocol_version == MODERN_VERSION
            assert session.initialize_result is None
            discovered = session.discover_result
            assert discovered is not None
            assert MODERN_VERSION in discovered.supported_versions
        # The server identity reached the client: from `initialize`, or from the discover result's `_meta`.
        assert client.server_info is not None
        assert client.server_info.name == "giftgenius"
        capabilities = client.server_capabilities
        assert capabilities.tools is not None
        assert capabilities.resources is not None
        assert capabilities.prompts is not None


async def test_list_tools(era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        listing = await client.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert "suggest_gifts" in tools, sorted(tools)
    tool = tools["suggest_gifts"]
    schema = tool.input_schema
    assert schema["type"] == "object"
    assert {"occasion", "budget", "recipient", "count"} <= set(schema["properties"])
    assert set(schema["required"]) == {"occasion", "budget", "recipient"}
    assert schema["properties"]["budget"]["type"] == "number"
    assert schema["properties"]["count"]["type"] == "integer"
    output = tool.output_schema
    assert output is not None
    assert output["type"] == "object"
    assert "gifts" in output["properties"]


async def test_suggest_gifts_within_budget_and_ranked(era: str) -> None:
    budget = 100
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        result = await client.call_tool(
            "suggest_gifts", {"occasion": "birthday", "budget": budget, "recipient": RECIPIENT, "count": 3}
        )
        catalog = await read_catalog(client)
    assert not result.is_error, result
    assert only_text(result.content).strip()
    structured = result.structured_content
    assert isinstance(structured, dict), structured
    gifts = structured["gifts"]
    assert 1 <= len(gifts) <= 3, gifts
    by_name = {item["name"]: item for item in catalog["items"]}
    for gift in gifts:
        assert set(gift) == {"name", "price", "category", "reason"}, gift
        assert gift["price"] <= budget, gift
        assert gift["reason"].strip(), gift
        # Every suggestion is a real catalog item, with the catalog's price and category.
        item = by_name[gift["name"]]
        assert (gift["price"], gift["category"]) == (item["price"], item["category"])
    top = by_name[gifts[0]["name"]]
    assert BOARD_GAMES in top["tags"], (gifts[0], top)


async def test_suggest_gifts_nothing_fits(era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        result = await client.call_tool(
            "suggest_gifts", {"occasion": "birthday", "budget": 1, "recipient": RECIPIENT}
        )
        catalog = await read_catalog(client)
    assert result.is_error is True, result
    message = only_text(result.content)
    # Nobody's age was said: an adult is assumed, who gets no children's item.
    suited = [
        item
        for item in catalog["items"]
        if {"birthday", "any"} & set(item["occasions"]) and item["age_max"] >= ADULT_AGE
    ]
    cheapest = min(item["price"] for item in suited)
    assert cheapest > 1
    assert any(form in message for form in price_text(cheapest)), (cheapest, message)


async def test_read_catalog(era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        listing = await client.list_resources()
        catalog = await read_catalog(client)
    resources = {resource.name: resource for resource in listing.resources}
    assert "gift_catalog" in resources, sorted(resources)
    assert resources["gift_catalog"].uri == CATALOG_URI
    assert resources["gift_catalog"].mime_type == "application/json"
    items = catalog["items"]
    assert len(items) >= 300
    assert {item["category"] for item in items} == set(catalog["categories"])
    assert len({item["name"] for item in items}) == len(items)


async def test_read_category_template(era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        templates = await client.list_resource_templates()
        catalog = await read_catalog(client)
        uri_templates = [template.uri_template for template in templates.resource_templates]
        assert CATEGORY_TEMPLATE in uri_templates
        # A category whose name needs no escaping in a URI.
        category = next(name for name in catalog["categories"] if name.isalpha())
        uri = UriTemplate.parse(CATEGORY_TEMPLATE).expand({"category": category})
        page = await read_json(client, uri)
    expected = sorted(item["name"] for item in catalog["items"] if item["category"] == category)
    assert page["category"] == category
    assert sorted(item["name"] for item in page["items"]) == expected
    prices = [item["price"] for item in page["items"]]
    assert page["price_range"] == {"min": min(prices), "max": max(prices)}


async def test_get_prompt(era: str) -> None:
    name = "Marguerite"
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        listing = await client.list_prompts()
        prompt = await client.get_prompt(
            "gift_congrats_style", {"recipient_name": name, "occasion": "birthday"}
        )
    prompts = {entry.name: entry for entry in listing.prompts}
    assert "gift_congrats_style" in prompts, sorted(prompts)
    arguments = {
        argument.name: argument.required for argument in prompts["gift_congrats_style"].arguments or []
    }
    assert arguments["recipient_name"] is True
    assert arguments["occasion"] is True
    assert not arguments["tone"]
    assert prompt.messages
    assert name in only_text([message.content for message in prompt.messages])


async def test_read_category_template_needing_escapes(era: str) -> None:
    async with asyncio.timeout(TIMEOUT_SECONDS), connect(era) as client:
        catalog = await read_catalog(client)
        category = next(name for name in catalog["categories"] if not name.isalpha())
        uri = UriTemplate.parse(CATEGORY_TEMPLATE).expand({"category": category})
        assert uri != CATEGORY_TEMPLATE.format(category=category)
        page: Any = None
        error: MCPError | None = None
        try:
            page = await read_json(client, uri)
        except MCPError as exc:
            error = exc
    assert error is None, f"reading {uri}: {error!r}"
    assert page["category"] == category
    assert {item["name"] for item in page["items"]} == {
        item["name"] for item in catalog["items"] if item["category"] == category
    }
