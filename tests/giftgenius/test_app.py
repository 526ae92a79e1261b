"""GiftGenius over MCP, through the in-memory client, in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from giftgenius.app import CATALOG_URI, build_server
from giftgenius.catalog import load_catalog
from herald.testing import InMemoryClient, connect


@pytest.fixture(params=[False, True], ids=["handshake", "modern"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryClient]:
    async with connect(build_server(), modern=request.param) as connected:
        yield connected


async def test_tool_is_described(client: InMemoryClient) -> None:
    tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    suggest = tools["suggest_gifts"]
    schema = suggest["inputSchema"]
    assert schema["required"] == ["occasion", "budget", "recipient"]
    assert schema["properties"]["budget"]["exclusiveMinimum"] == 0
    assert schema["properties"]["count"]["maximum"] == 20
    assert suggest["outputSchema"]["required"] == ["gifts"]
    assert suggest["annotations"]["readOnlyHint"] is True


async def test_suggestions_fit_budget_and_interest(client: InMemoryClient) -> None:
    result = await client.call_tool(
        "suggest_gifts", {"occasion": "birthday", "budget": 100, "recipient": "friend who loves board games"}
    )
    gifts = result["structuredContent"]["gifts"]
    assert len(gifts) == 5
    assert all(gift["price"] <= 100 for gift in gifts)
    catalog = load_catalog()
    first = next(g for g in catalog.gifts if g.name == gifts[0]["name"])
    assert "board games" in first.tags
    assert gifts[0]["name"] in result["content"][0]["text"]
    assert "isError" not in result


async def test_nothing_fits_is_a_business_error(client: InMemoryClient) -> None:
    result = await client.call_tool(
        "suggest_gifts", {"occasion": "birthday", "budget": 1, "recipient": "a friend"}
    )
    assert result["isError"] is True
    cheapest = load_catalog().cheapest().price
    assert f"${cheapest:.2f}" in result["content"][0]["text"]
    # The same words, structured and within the outputSchema, for widgets that see no text.
    assert result["structuredContent"] == {"gifts": [], "notice": result["content"][0]["text"]}


async def test_bad_arguments_are_tool_errors_on_recent_versions(client: InMemoryClient) -> None:
    result = await client.call_tool("suggest_gifts", {"occasion": "birthday", "budget": -5, "recipient": "x"})
    assert result["isError"] is True
    assert "budget" in result["content"][0]["text"]


async def test_catalog_resource(client: InMemoryClient) -> None:
    listed = await client.request("resources/list")
    assert [entry["name"] for entry in listed["resources"]] == ["gifts", "gift_catalog", "job_event_schemas"]
    read = await client.request("resources/read", {"uri": CATALOG_URI})
    content = read["contents"][0]
    assert content["mimeType"] == "application/json"
    data = orjson.loads(content["text"])
    assert len(data["items"]) == len(load_catalog().gifts) >= 300
    assert data["categories"] == load_catalog().categories
    assert set(data["price_ranges"]) == set(load_catalog().categories)


async def test_category_template(client: InMemoryClient) -> None:
    catalog = load_catalog()
    category = catalog.categories[0]
    read = await client.request("resources/read", {"uri": f"{CATALOG_URI}/{category}"})
    data = orjson.loads(read["contents"][0]["text"])
    assert len(data["items"]) == len(catalog.in_category(category))
    assert data["price_range"]["min"] == catalog.price_range(category)[0]
    missing = await client.request_raw("resources/read", {"uri": f"{CATALOG_URI}/no-such-category"})
    assert missing["error"]["code"] in (-32002, -32602)


async def test_category_completion(client: InMemoryClient) -> None:
    categories = load_catalog().categories
    result = await client.request(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": f"{CATALOG_URI}/{{category}}"},
            "argument": {"name": "category", "value": categories[0][:2]},
        },
    )
    assert categories[0] in result["completion"]["values"]
    assert all(value.startswith(categories[0][:2]) for value in result["completion"]["values"])


async def test_congrats_prompt(client: InMemoryClient) -> None:
    prompt = (await client.request("prompts/list"))["prompts"][0]
    assert prompt["name"] == "gift_congrats_style"
    assert [(a["name"], a["required"]) for a in prompt["arguments"]] == [
        ("recipient_name", True),
        ("occasion", True),
        ("tone", False),
    ]
    rendered = await client.request(
        "prompts/get",
        {
            "name": "gift_congrats_style",
            "arguments": {"recipient_name": "Priya", "occasion": "retirement", "tone": "playful"},
        },
    )
    assert len(rendered["messages"]) == 2
    assert "Priya" in rendered["messages"][1]["content"]["text"]
    assert rendered["_meta"]["giftgenius/systemMessage"] == rendered["messages"][0]["content"]["text"]
    bad_tone = await client.request_raw(
        "prompts/get",
        {
            "name": "gift_congrats_style",
            "arguments": {"recipient_name": "P", "occasion": "birthday", "tone": "angry"},
        },
    )
    assert bad_tone["error"]["code"] == -32602
    assert "warm" in bad_tone["error"]["message"]
