"""GiftGenius over MCP, through the in-memory client, in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from giftgenius.app import CATALOG_URI, build_server
from giftgenius.catalog import OCCASIONS, load_catalog
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
    properties = schema["properties"]
    assert properties["budget"]["minimum"] == 0.01
    assert properties["count"]["maximum"] == 20
    assert properties["recipient"]["minLength"] == 1
    assert properties["recipient"]["pattern"] == r"\S"
    assert properties["occasion"]["examples"] == list(OCCASIONS)
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
    # "A friend" is taken for an adult: the cheapest option is the cheapest gift not made for children.
    cheapest = min(gift.price for gift in load_catalog().gifts if gift.age_max >= 18)
    assert f"${cheapest:.2f}" in result["content"][0]["text"]
    # The same words, structured and within the outputSchema, for widgets that see no text.
    assert result["structuredContent"] == {"gifts": [], "notice": result["content"][0]["text"]}


async def test_bad_arguments_are_tool_errors_on_recent_versions(client: InMemoryClient) -> None:
    result = await client.call_tool("suggest_gifts", {"occasion": "birthday", "budget": -5, "recipient": "x"})
    assert result["isError"] is True
    assert "budget" in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"occasion": "birthday", "budget": 50, "recipient": " \t"}, "recipient"),
        ({"occasion": "birthday", "budget": 0.001, "recipient": "a friend"}, "budget"),
        ({"occasion": "birthday", "budget": 0, "recipient": "a friend"}, "budget"),
    ],
)
async def test_schema_violations_name_the_field(
    client: InMemoryClient, arguments: dict[str, object], field: str
) -> None:
    result = await client.call_tool("suggest_gifts", arguments)
    assert result["isError"] is True
    assert f"{field}:" in result["content"][0]["text"]


# An empty or blank occasion, and a recipient blank to Python's str.strip() but not to the schema's
# \S (U+0085): the tool's own check answers, as a tool error that lists what it accepts (every
# occasion it knows), never as an internal error or the schema validator's words.
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"occasion": "", "budget": 50, "recipient": "a friend"}, ["occasion", *OCCASIONS]),
        ({"occasion": "   ", "budget": 50, "recipient": "a friend"}, ["occasion", *OCCASIONS]),
        ({"occasion": "\x1c", "budget": 50, "recipient": "a friend"}, ["occasion", *OCCASIONS]),
        ({"occasion": "birthday", "budget": 50, "recipient": "\x85"}, ["recipient", "e.g."]),
    ],
)
async def test_blank_text_past_the_schema_is_an_actionable_tool_error(
    client: InMemoryClient, arguments: dict[str, object], expected: list[str]
) -> None:
    response = await client.request_raw("tools/call", {"name": "suggest_gifts", "arguments": arguments})
    result = response["result"]
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert "internal error" not in message
    assert all(word in message for word in expected), message
    assert result["structuredContent"] == {"gifts": [], "notice": message}


async def test_unmatched_interest_is_said_in_text_and_structure(client: InMemoryClient) -> None:
    result = await client.call_tool(
        "suggest_gifts", {"occasion": "birthday", "budget": 80, "recipient": "my dad who likes sailing"}
    )
    assert "isError" not in result
    notice = result["structuredContent"]["notice"]
    assert "'sailing'" in notice
    assert "closest" in notice
    assert result["content"][0]["text"].startswith(notice)
    assert result["structuredContent"]["gifts"]


async def test_disliked_interest_is_never_suggested(client: InMemoryClient) -> None:
    result = await client.call_tool(
        "suggest_gifts",
        {"occasion": "birthday", "budget": 100, "recipient": "someone who hates board games", "count": 20},
    )
    by_name = {gift.name: gift for gift in load_catalog().gifts}
    names = [gift["name"] for gift in result["structuredContent"]["gifts"]]
    assert len(names) == 20
    assert not [name for name in names if "board games" in by_name[name].tags]


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
