"""Structured hints on suggest_gifts: declared for the model, and ahead of the free text, over MCP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from giftgenius.app import build_server
from giftgenius.catalog import load_catalog
from giftgenius.suggest import AGE_GROUPS, SuggestionInputError, suggest_gifts
from herald.testing import InMemoryClient, connect

CATALOG = load_catalog()


@pytest.fixture(params=[False, True], ids=["handshake", "modern"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryClient]:
    async with connect(build_server(), modern=request.param) as connected:
        yield connected


async def _gifts(client: InMemoryClient, **arguments: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    base = {"occasion": "birthday", "budget": 60, "recipient": "my friend"}
    result = await client.call_tool("suggest_gifts", base | arguments)
    assert "isError" not in result, result
    structured = result["structuredContent"]
    return structured["gifts"], structured


def _tags(gift: dict[str, Any]) -> tuple[str, ...]:
    return next(item for item in CATALOG.gifts if item.name == gift["name"]).tags


async def test_the_hints_are_optional_and_tell_the_model_to_fill_them(client: InMemoryClient) -> None:
    tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    schema = tools["suggest_gifts"]["inputSchema"]
    assert schema["required"] == ["occasion", "budget", "recipient"]
    properties = schema["properties"]
    for name in ("interests", "avoid", "age", "age_group", "relationship"):
        assert "conversation" in properties[name]["description"], name
    assert all(f"'{group}'" in str(properties["age_group"]) for group in AGE_GROUPS)


async def test_hinted_interests_replace_the_parsed_ones_and_are_quoted(client: InMemoryClient) -> None:
    gifts, _ = await _gifts(client, recipient="my brother who loves board games", interests=["fishing"])
    assert gifts
    assert all("fishing" in _tags(gift) for gift in gifts)
    assert all('Matches the interest "fishing" you gave.' in gift["reason"] for gift in gifts)


async def test_avoid_adds_to_what_the_description_rules_out(client: InMemoryClient) -> None:
    gifts, _ = await _gifts(
        client, recipient="loves coffee and tea, hates golf", avoid=["coffee"], budget=100, count=10
    )
    assert gifts
    assert not [gift for gift in gifts if {"coffee", "golf"} & set(_tags(gift))]
    assert any("tea" in _tags(gift) for gift in gifts)


async def test_a_hinted_age_overrides_the_parsed_one(client: InMemoryClient) -> None:
    gifts, _ = await _gifts(client, recipient="my 40-year-old nephew who loves building", age=9, count=10)
    assert gifts
    assert all(gift.suits_age(9) for gift in (CATALOG.by_id(_id(item)) for item in gifts))


async def test_an_age_group_hint_keeps_childrens_gifts_from_an_adult(client: InMemoryClient) -> None:
    gifts, _ = await _gifts(client, recipient="my nephew who loves dinosaurs and building", age_group="adult")
    assert all(CATALOG.by_id(_id(item)).age_max >= 18 for item in gifts)
    teen, _ = await _gifts(client, recipient="my nephew", age_group="teen", interests=["minecraft"])
    assert teen
    assert all(CATALOG.by_id(_id(item)).suits_age(15) for item in teen)


async def test_a_relationship_hint_decides_what_filler_relates(client: InMemoryClient) -> None:
    gifts, structured = await _gifts(client, recipient="Sam", relationship="boss", count=5)
    assert gifts
    assert all("office" in _tags(gift) for gift in gifts)
    assert all("For your boss" in gift["reason"] for gift in gifts)
    assert "notice" not in structured


async def test_a_bad_hint_is_refused_by_the_schema(client: InMemoryClient) -> None:
    result = await client.call_tool(
        "suggest_gifts",
        {"occasion": "birthday", "budget": 50, "recipient": "a friend", "age_group": "toddlerish"},
    )
    assert result.get("isError") or "error" in result


@pytest.mark.parametrize(
    ("hints", "word"),
    [({"age": -1}, "age"), ({"age_group": "elderly"}, "age_group"), ({"interests": "fishing"}, "interests")],
)
def test_bad_hints_name_the_hint_to_change(hints: dict[str, Any], word: str) -> None:
    with pytest.raises(SuggestionInputError, match=word):
        suggest_gifts(CATALOG, occasion="birthday", budget=50, recipient="a friend", **hints)


def _id(item: dict[str, Any]) -> str:
    return next(gift.id for gift in CATALOG.gifts if gift.name == item["name"])
