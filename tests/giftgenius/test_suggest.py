"""Gift suggestions respect the budget, rank by interest and occasion, and explain themselves."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from giftgenius.catalog import Catalog, load_catalog
from giftgenius.matching import age_hint
from giftgenius.suggest import OCCASIONS, NoFit, Suggestions, normalize_occasion, suggest_gifts

CATALOG = load_catalog()


def _suggest(**kwargs: object) -> Suggestions:
    result = suggest_gifts(CATALOG, **kwargs)  # type: ignore[arg-type]
    assert isinstance(result, Suggestions), result
    return result


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return CATALOG


def test_board_games_rank_first(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=60, recipient="friend who loves board games")
    assert len(result.gifts) == 5
    for item in result.gifts:
        assert "board games" in catalog.by_id(item.id).tags, item.id
        assert "board games" in item.reason


def test_sci_fi_finds_science_fiction(catalog: Catalog) -> None:
    result = _suggest(occasion="holiday", budget=100, recipient="my brother, a huge sci-fi fan")
    top = catalog.by_id(result.gifts[0].id)
    assert "science fiction" in top.tags
    assert sum("science fiction" in catalog.by_id(item.id).tags for item in result.gifts) >= 4


def test_several_interests_are_all_represented(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=80, recipient="loves hiking, coffee and photography")
    covered = {tag for item in result.gifts for tag in catalog.by_id(item.id).tags}
    assert {"hiking", "coffee", "photography"} <= covered


def test_exact_occasion_beats_any_and_other(catalog: Catalog) -> None:
    result = _suggest(occasion="baby shower", budget=50, recipient="my coworker Dana", count=5)
    assert all("baby_shower" in catalog.by_id(item.id).occasions for item in result.gifts)


def test_budget_share_is_preferred(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=100, recipient="loves coffee")
    top = result.gifts[0]
    assert 40 <= top.price <= 100


def test_structured_and_text_output() -> None:
    result = _suggest(occasion="wedding", budget=200, recipient="a couple who love cooking", count=3)
    structured = result.to_structured()
    assert list(structured) == ["gifts"]
    assert len(structured["gifts"]) == 3
    for entry, item in zip(structured["gifts"], result.gifts, strict=True):
        assert set(entry) == {"name", "price", "category", "reason"}
        assert entry["name"] == item.name
        assert entry["price"] == item.price
    text = result.to_text()
    assert text.startswith("1. ")
    assert f"${result.gifts[0].price:.2f}" in text
    assert "3. " in text


def test_reason_mentions_occasion_and_budget() -> None:
    item = _suggest(occasion="retirement", budget=100, recipient="my boss", count=1).gifts[0]
    assert "retirement" in item.reason
    assert "$100.00 budget" in item.reason


def test_no_fit_reports_the_real_cheapest_gift(catalog: Catalog) -> None:
    result = suggest_gifts(catalog, occasion="birthday", budget=1, recipient="my friend")
    assert isinstance(result, NoFit)
    cheapest = min(catalog.gifts, key=lambda gift: (gift.price, gift.id))
    assert result.cheapest_price == cheapest.price
    assert result.cheapest_name == cheapest.name
    message = result.message()
    assert "$1.00" in message
    assert "birthday" in message
    assert f"at least ${cheapest.price:.2f}" in message


def test_no_fit_respects_the_age_filter(catalog: Catalog) -> None:
    result = suggest_gifts(catalog, occasion="birthday", budget=1, recipient="my 30-year-old sister")
    assert isinstance(result, NoFit)
    adult_prices = [gift.price for gift in catalog.gifts if gift.age_min <= 30 <= gift.age_max]
    assert result.cheapest_price == min(adult_prices)
    assert "30-year-old" in result.reason


@pytest.mark.parametrize(
    ("recipient", "age"),
    [("my 6-year-old niece who loves space", 6), ("a toddler", 2), ("a teen who loves music", 15)],
)
def test_age_hint_filters(catalog: Catalog, recipient: str, age: int) -> None:
    result = _suggest(occasion="birthday", budget=100, recipient=recipient, count=10)
    for item in result.gifts:
        gift = catalog.by_id(item.id)
        assert gift.age_min <= age <= gift.age_max, item.id


def test_adults_are_not_offered_toddler_toys_by_default(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=40, recipient="my friend", count=10)
    assert all(catalog.by_id(item.id).age_max >= 13 for item in result.gifts)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Baby shower", "baby_shower"),
        ("christmas", "holiday"),
        ("xmas", "holiday"),
        ("valentine's day", "valentines"),
    ],
)
def test_occasion_normalization(text: str, expected: str) -> None:
    assert normalize_occasion(text) == expected
    assert expected in OCCASIONS
    item = _suggest(occasion=text, budget=80, recipient="my partner", count=1).gifts[0]
    assert expected in CATALOG.by_id(item.id).occasions


def test_unknown_occasion_is_accepted() -> None:
    result = _suggest(occasion="Quinceañera", budget=50, recipient="a teen who loves music")
    assert result.gifts
    assert "quinceañera" in result.gifts[0].reason


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": 0}, "budget"),
        ({"budget": -5}, "budget"),
        ({"budget": float("nan")}, "budget"),
        ({"count": 0}, "count"),
        ({"count": 21}, "count"),
        ({"occasion": "  "}, "occasion"),
        ({"recipient": ""}, "recipient"),
    ],
)
def test_invalid_inputs_raise_actionable_errors(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"occasion": "birthday", "budget": 50, "recipient": "a friend", "count": 5}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        suggest_gifts(CATALOG, **arguments)  # type: ignore[arg-type]


_OCCASION_TEXT = st.one_of(
    st.sampled_from(OCCASIONS),
    st.sampled_from(["Baby shower", "xmas", "Valentine's Day", "new job", "Diwali", "just because"]),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=20).filter(str.strip),
)
_RECIPIENT_TEXT = st.one_of(
    st.sampled_from(
        [
            "friend who loves board games",
            "my 8-year-old nephew",
            "a toddler",
            "teen gamer",
            "sci-fi bookworm who loves tea",
            "grandma turning 90 who loves gardening and cats",
            "coworker",
        ]
    ),
    st.text(min_size=1, max_size=60).filter(str.strip),
)


@settings(max_examples=150, deadline=None)
@given(
    budget=st.floats(min_value=0.01, max_value=2000, allow_nan=False),
    occasion=_OCCASION_TEXT,
    recipient=_RECIPIENT_TEXT,
    count=st.integers(min_value=1, max_value=20),
)
def test_suggestions_always_fit_the_budget(budget: float, occasion: str, recipient: str, count: int) -> None:
    result = suggest_gifts(CATALOG, occasion=occasion, budget=budget, recipient=recipient, count=count)
    again = suggest_gifts(CATALOG, occasion=occasion, budget=budget, recipient=recipient, count=count)
    assert result == again
    if isinstance(result, NoFit):
        assert result.cheapest_price > budget
        return
    assert 1 <= len(result.gifts) <= count
    assert all(item.price <= budget for item in result.gifts)
    assert len({item.id for item in result.gifts}) == len(result.gifts)
    age = age_hint(recipient)
    eligible = [
        gift for gift in CATALOG.gifts if gift.price <= budget and (age is None or gift.suits_age(age))
    ]
    assert len(result.gifts) == min(count, len(eligible))
