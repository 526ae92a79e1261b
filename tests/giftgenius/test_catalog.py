"""The packaged catalog loads, validates and answers its queries correctly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from giftgenius.catalog import OCCASIONS, Catalog, CatalogError, Gift, load_catalog, normalize_occasion

INTERESTS = [
    "board games",
    "science fiction",
    "cooking",
    "hiking",
    "coffee",
    "gardening",
    "photography",
    "yoga",
    "running",
    "music",
    "gaming",
    "reading",
    "travel",
    "wine",
    "tea",
    "cats",
    "dogs",
    "knitting",
    "programming",
    "astronomy",
    "fishing",
    "woodworking",
    "video games",
    "minecraft",
    "vinyl",
    "grilling",
]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _raw_gift(**overrides: object) -> dict[str, object]:
    gift: dict[str, object] = {
        "id": "test-gift",
        "name": "Test Gift",
        "category": "games",
        "price": 10.0,
        "tags": ["board games"],
        "occasions": ["birthday"],
        "age_min": 8,
        "age_max": 99,
        "description": "A gift used in tests.",
    }
    gift.update(overrides)
    return gift


def _write(tmp_path: Path, gifts: list[dict[str, object]]) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"version": 1, "currency": "USD", "gifts": gifts}), encoding="utf-8")
    return path


def test_catalog_is_large_with_unique_ids(catalog: Catalog) -> None:
    assert len(catalog.gifts) >= 300
    ids = [gift.id for gift in catalog.gifts]
    assert len(ids) == len(set(ids))


def test_every_gift_is_well_formed(catalog: Catalog) -> None:
    for gift in catalog.gifts:
        assert isinstance(gift, Gift)
        assert gift.name
        assert gift.description
        assert gift.tags
        assert 0 < gift.price <= 1500
        assert 0 <= gift.age_min <= gift.age_max <= 99
        assert set(gift.occasions) <= set(OCCASIONS), gift.id
        assert all(tag == tag.lower() for tag in gift.tags), gift.id


def test_catalog_spans_categories_and_prices(catalog: Catalog) -> None:
    assert len(catalog.categories) >= 15
    assert catalog.categories == sorted(catalog.categories)
    prices = [gift.price for gift in catalog.gifts]
    assert min(prices) <= 6
    assert max(prices) >= 1000
    assert sum(price < 30 for price in prices) >= 60
    assert sum(price < 100 for price in prices) >= 150


@pytest.mark.parametrize("interest", INTERESTS)
def test_key_interests_have_several_gifts_at_different_prices(catalog: Catalog, interest: str) -> None:
    prices = {gift.price for gift in catalog.gifts if interest in gift.tags}
    assert len(prices) >= 4, interest


def test_default_load_is_cached(catalog: Catalog) -> None:
    assert load_catalog() is catalog


def test_queries(catalog: Catalog) -> None:
    games = catalog.in_category("Games")
    assert games
    assert all(gift.category == "games" for gift in games)
    assert catalog.in_category("no such category") == ()
    first = catalog.gifts[0]
    assert catalog.by_id(first.id) == first
    with pytest.raises(KeyError, match="no-such-gift"):
        catalog.by_id("no-such-gift")


def test_cheapest_and_price_range(catalog: Catalog) -> None:
    prices = [gift.price for gift in catalog.gifts]
    assert catalog.cheapest().price == min(prices)
    assert catalog.price_range() == (min(prices), max(prices))
    wedding = [gift.price for gift in catalog.gifts if {"wedding", "any"} & set(gift.occasions)]
    assert catalog.cheapest("Wedding").price == min(wedding)
    kitchen = [gift.price for gift in catalog.in_category("kitchen")]
    assert catalog.price_range("kitchen") == (min(kitchen), max(kitchen))
    with pytest.raises(KeyError):
        catalog.price_range("no such category")


def test_summary_and_json_are_json_ready(catalog: Catalog) -> None:
    summary = catalog.summary()
    assert summary["item_count"] == len(catalog.gifts)
    assert sum(entry["count"] for entry in summary["categories"]) == len(catalog.gifts)
    assert [entry["name"] for entry in summary["categories"]] == catalog.categories
    full = catalog.to_json_dict()
    assert full["categories"] == catalog.categories
    assert len(full["items"]) == len(catalog.gifts)
    assert set(full["price_ranges"]) == set(catalog.categories)
    assert json.loads(json.dumps(full)) == full
    assert catalog.item_json(catalog.gifts[0])["id"] == catalog.gifts[0].id


def test_load_from_path(tmp_path: Path) -> None:
    loaded = load_catalog(_write(tmp_path, [_raw_gift()]))
    assert loaded.by_id("test-gift").tags == ("board games",)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"price": "cheap"}, "'price'"),
        ({"price": -1}, "positive"),
        ({"occasions": ["birthday", "bar mitzvah"]}, "unknown occasions"),
        ({"tags": []}, "'tags'"),
        ({"age_min": 50, "age_max": 10}, "age_min"),
        ({"id": "Not A Slug"}, "slug"),
        ({"age_min": True}, "'age_min'"),
    ],
)
def test_invalid_entries_are_named(tmp_path: Path, override: dict[str, object], message: str) -> None:
    path = _write(tmp_path, [_raw_gift(id="fine-gift"), _raw_gift(**override)])
    with pytest.raises(CatalogError, match=message) as caught:
        load_catalog(path)
    assert "gift #1" in str(caught.value)


def test_missing_field_and_duplicate_id(tmp_path: Path) -> None:
    broken = _raw_gift()
    del broken["description"]
    with pytest.raises(CatalogError, match=r"gift #0 \('test-gift'\): missing field 'description'"):
        load_catalog(_write(tmp_path, [broken]))
    with pytest.raises(CatalogError, match="duplicate id"):
        load_catalog(_write(tmp_path, [_raw_gift(), _raw_gift()]))


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid JSON"):
        load_catalog(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Baby shower", "baby_shower"),
        ("baby-shower", "baby_shower"),
        ("  BIRTHDAY ", "birthday"),
        ("christmas", "holiday"),
        ("Xmas", "holiday"),
        ("Valentine's Day", "valentines"),
        ("valentine’s day", "valentines"),
        ("Mother's Day", "mothers_day"),
        ("thank you", "thank_you"),
        ("get well soon", "get_well"),
        ("Quinceañera party", "quinceañera_party"),
    ],
)
def test_normalize_occasion(text: str, expected: str) -> None:
    assert normalize_occasion(text) == expected


def test_drinks_say_they_hold_alcohol(catalog: Catalog) -> None:
    """The sobriety filter reads tags: every drink gift must say it holds alcohol or serves drinkers."""
    drinks = {"wine", "beer", "whisky", "spirits", "champagne", "cocktails"}
    for gift in catalog.gifts:
        if drinks & set(gift.tags):
            assert {"contains alcohol", "for drinkers"} & set(gift.tags), gift.id


def test_pet_gear_says_which_pet_it_needs(catalog: Catalog) -> None:
    """The pet filter reads tags: a gift for a pet to use says which pet it needs."""
    for gift in catalog.in_category("pets"):
        if "toys" in gift.tags or gift.name.lower().startswith(("dog ", "cat ")):
            assert {"needs a dog", "needs a cat", "needs a pet"} & set(gift.tags), gift.id


def test_a_gift_for_one_event_is_made_for_it(catalog: Catalog) -> None:
    assert catalog.by_id("personalized-retirement-plaque").made_for == "retirement"
    assert catalog.by_id("dog-hiking-harness-with-saddlebags").made_for is None
