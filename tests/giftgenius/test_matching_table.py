"""Everyday descriptions, and what their picks must and must not be: a table, and a figure for it.

Each row is a description someone would type (sometimes with the hints a model would pass), the
catalog tags one of the picks must carry, what no pick may be, and what counts as on topic for
that person: a tag, a category, or ``occasion:<name>`` for a gift listed for that occasion (a
Father's Day gift for a dad). The figure is the share of all picks across the table that are on
topic; the README quotes it. Run this module to print it::

    .venv/bin/python -m tests.giftgenius.test_matching_table
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from giftgenius.catalog import Gift, load_catalog
from giftgenius.suggest import Suggestions, suggest_gifts

CATALOG = load_catalog()
#: The lowest share of on-topic picks the table may have.
THRESHOLD = 0.9

_NOT_VEGAN = frozenset(
    {
        "contains meat",
        "contains fish",
        "contains dairy",
        "contains eggs",
        "contains honey",
        "made with leather",
    }
)
_ALCOHOL = frozenset({"contains alcohol", "for drinkers"})


@dataclass(frozen=True)
class Row:
    recipient: str
    occasion: str
    budget: float
    on_topic: frozenset[str]
    must: tuple[str, ...] = ()
    never_tags: frozenset[str] = frozenset()
    never_ids: frozenset[str] = frozenset()
    hints: Mapping[str, Any] = field(default_factory=dict)
    age: int | None = None


def _row(recipient: str, occasion: str, budget: float, on_topic: str, **rest: object) -> Row:
    return Row(recipient, occasion, budget, frozenset(on_topic.split(",")), **rest)  # type: ignore[arg-type]


TABLE: tuple[Row, ...] = (
    _row(
        "teenage nephew obsessed with Minecraft",
        "birthday",
        60,
        "minecraft,video games,gaming,teens",
        must=("minecraft",),
        never_tags=frozenset({"needs a dog", "needs a cat", "needs a pet"}),
        never_ids=frozenset({"dog-treat-subscription-three-months"}),
        age=15,
    ),
    _row(
        "boss who collects vinyl records",
        "holiday",
        80,
        "vinyl,music,office",
        must=("vinyl",),
        never_tags=frozenset({"board games", "spices"}),
        never_ids=frozenset({"world-spice-sampler", "global-spice-blend-subscription"}),
    ),
    _row(
        "my retired dad who loves gardening",
        "birthday",
        80,
        "gardening,occasion:retirement,occasion:fathers_day",
        must=("gardening",),
        never_ids=frozenset({"personalized-retirement-plaque", "retirement-adventure-planner-box"}),
    ),
    _row(
        "my dad, who just retired",
        "birthday",
        80,
        "occasion:retirement,occasion:fathers_day",
        never_ids=frozenset({"personalized-retirement-plaque", "retirement-adventure-planner-box"}),
    ),
    _row(
        "colleague who likes art, running",
        "birthday",
        50,
        "art,painting,drawing,running,office",
        must=("art", "running"),
        never_tags=frozenset({"needs a dog"}),
    ),
    _row(
        "my sister is vegan and loves cooking",
        "birthday",
        60,
        "cooking,vegan,food",
        must=("cooking",),
        never_tags=_NOT_VEGAN,
    ),
    _row(
        "my vegetarian brother who loves snacks",
        "holiday",
        40,
        "snacks,food & drink,vegan",
        must=("snacks",),
        never_tags=frozenset({"contains meat", "contains gelatin"}),
    ),
    _row(
        "a sober friend who loves hosting at home",
        "housewarming",
        60,
        "home,entertaining,zero proof,decor,occasion:housewarming",
        never_tags=_ALCOHOL,
    ),
    _row(
        "coworker who doesn't drink",
        "thank you",
        40,
        "office,zero proof,occasion:thank_you",
        never_tags=_ALCOHOL,
    ),
    _row(
        "my dad who likes fishing",
        "father's day",
        80,
        "fishing",
        must=("fishing",),
        never_ids=frozenset({"aquarium-starter-kit"}),
    ),
    _row("my uncle, a woodworker", "birthday", 70, "woodworking,tools,diy", must=("woodworking",)),
    _row(
        "my son, 14, loves video games",
        "birthday",
        60,
        "video games,gaming,teens",
        must=("video games",),
        age=14,
    ),
    _row(
        "grandma turning 80 who loves knitting and tea",
        "birthday",
        60,
        "knitting,tea,crafts,yarn",
        must=("knitting", "tea"),
        age=80,
    ),
    _row(
        "mom of two kids who loves board games",
        "mother's day",
        60,
        "board games,family,occasion:mothers_day",
        must=("board games",),
    ),
    _row(
        "friend who has a dog and loves hiking",
        "birthday",
        60,
        "hiking,dogs,outdoors",
        must=("hiking",),
    ),
    _row(
        "my aunt, allergic to cats, loves gardening",
        "birthday",
        50,
        "gardening",
        must=("gardening",),
        never_tags=frozenset({"cats", "needs a cat"}),
    ),
    _row(
        "coworker who just had a new baby",
        "gift",
        50,
        "babies,toddlers,occasion:baby_shower",
    ),
    _row(
        "my sister is moving into a new apartment",
        "just because",
        60,
        "home,occasion:housewarming",
        must=("home",),
    ),
    _row(
        "friend who just got a new job, loves coffee",
        "promotion",
        50,
        "coffee,office,occasion:promotion",
        must=("coffee",),
    ),
    _row(
        "my cousin just graduated, into photography",
        "graduation",
        80,
        "photography,occasion:graduation",
        must=("photography",),
    ),
    _row(
        "my wife, who loves yoga and wine",
        "anniversary",
        100,
        "yoga,wine,romance,occasion:anniversary",
        must=("yoga", "wine"),
    ),
    _row(
        "my manager, a huge sci-fi fan",
        "holiday",
        60,
        "science fiction,office",
        must=("science fiction",),
    ),
    _row(
        "8-year-old niece who loves dinosaurs and space",
        "birthday",
        40,
        "dinosaurs,astronomy,science,toys",
        must=("dinosaurs",),
        age=8,
    ),
    _row("a teen who loves music", "birthday", 50, "music,teens", must=("music",), age=15),
    _row("my boss, who loves golf", "promotion", 80, "golf,office,occasion:promotion", must=("golf",)),
    _row(
        "my husband, a foodie who loves to grill",
        "father's day",
        60,
        "grilling,cooking,food,occasion:fathers_day",
        must=("grilling",),
    ),
    _row(
        "my boss, who hates board games, into coffee",
        "holiday",
        50,
        "coffee,office",
        must=("coffee",),
        never_tags=frozenset({"board games"}),
    ),
    _row(
        "my friend",
        "birthday",
        60,
        "fishing,coffee,occasion:fathers_day",
        must=("fishing", "coffee"),
        hints={"interests": ["fishing", "coffee"], "relationship": "dad"},
    ),
    _row(
        "my nephew who likes lego",
        "holiday",
        60,
        "minecraft,video games,gaming,teens",
        must=("minecraft",),
        hints={"interests": ["minecraft"], "age_group": "teen"},
        age=15,
    ),
    _row(
        "neighbor who loves cooking",
        "thank you",
        40,
        "cooking,food,kitchen,occasion:thank_you",
        must=("cooking",),
        never_tags=frozenset({"spices"}),
        hints={"avoid": ["spices"]},
    ),
    _row(
        "my brother, 35, who plays soccer and has a cat",
        "birthday",
        60,
        "soccer,team sports,cats",
        must=("soccer",),
        age=35,
    ),
)


def _suggest(row: Row) -> Suggestions:
    found = suggest_gifts(
        CATALOG, occasion=row.occasion, budget=row.budget, recipient=row.recipient, **row.hints
    )
    assert isinstance(found, Suggestions), found
    return found


def _on_topic(row: Row, gift: Gift) -> bool:
    marks = {*gift.tags, gift.category, *(f"occasion:{occasion}" for occasion in gift.occasions)}
    return bool(marks & row.on_topic)


def relevance() -> tuple[int, int]:
    """(on-topic picks, all picks) across the table."""
    picks = [(row, CATALOG.by_id(item.id)) for row in TABLE for item in _suggest(row).gifts]
    return sum(_on_topic(row, gift) for row, gift in picks), len(picks)


@pytest.mark.parametrize("row", TABLE, ids=[row.recipient for row in TABLE])
def test_each_description_gets_what_it_must_and_nothing_it_must_not(row: Row) -> None:
    result = _suggest(row)
    gifts = [CATALOG.by_id(item.id) for item in result.gifts]
    assert gifts, result.notice
    tags = {tag for gift in gifts for tag in gift.tags}
    missing = [tag for tag in row.must if tag not in tags]
    assert not missing, (missing, [gift.id for gift in gifts])
    assert not [gift.id for gift in gifts if row.never_tags & set(gift.tags)]
    assert not [gift.id for gift in gifts if gift.id in row.never_ids]
    if row.age is not None:
        assert all(gift.suits_age(row.age) for gift in gifts), [gift.id for gift in gifts]
    assert all(item.price <= row.budget for item in result.gifts)


def test_the_table_is_mostly_on_topic() -> None:
    relevant, total = relevance()
    assert total >= 4 * len(TABLE)
    assert relevant / total >= THRESHOLD, f"{relevant} of {total} picks on topic"


if __name__ == "__main__":
    on_topic, picks = relevance()
    print(f"{on_topic} of {picks} picks on topic across {len(TABLE)} descriptions: {on_topic / picks:.1%}")
