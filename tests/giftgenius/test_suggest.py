"""Gift suggestions respect the budget, rank by interest and occasion, and explain themselves."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from giftgenius.catalog import Catalog, load_catalog
from giftgenius.matching import (
    Interests,
    age_hint,
    closest_table,
    excluded,
    extract_interests,
    match_gift,
    read_context,
)
from giftgenius.suggest import (
    OCCASIONS,
    NoFit,
    SuggestionInputError,
    Suggestions,
    normalize_occasion,
    suggest_gifts,
)

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
        assert "Matches 'board games' from your description." in item.reason


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
    # With no age said, a friend is an adult: children's gifts are not options.
    adult = [gift for gift in catalog.gifts if gift.age_max >= 18]
    cheapest = min(adult, key=lambda gift: (gift.price, gift.id))
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


def test_an_occasion_of_only_symbols_is_quoted_as_typed() -> None:
    item = _suggest(occasion="🎉", budget=50, recipient="a friend", count=1).gifts[0]
    assert "the 🎉." in item.reason
    assert "the ." not in item.reason


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
    with pytest.raises(SuggestionInputError, match=message):
        suggest_gifts(CATALOG, **arguments)  # type: ignore[arg-type]


def test_an_empty_occasion_lists_the_known_occasions() -> None:
    with pytest.raises(SuggestionInputError) as caught:
        suggest_gifts(CATALOG, occasion="", budget=50, recipient="a friend")
    assert all(occasion in str(caught.value) for occasion in OCCASIONS)


@pytest.mark.parametrize("budget", [0.001, 0.009999, 1e-300])
def test_a_budget_below_a_cent_is_refused(catalog: Catalog, budget: float) -> None:
    result = suggest_gifts(catalog, occasion="birthday", budget=budget, recipient="a friend")
    assert isinstance(result, NoFit)
    message = result.message()
    assert "$0.00 " not in message  # the budget is quoted as given, not rounded to nothing
    assert f"A budget of ${budget:g} is below the minimum of $0.01." in message
    adult = min(gift.price for gift in catalog.gifts if gift.age_max >= 18)
    assert f"at least ${adult:.2f}" in message


def test_a_budget_below_a_cent_is_refused_even_when_a_gift_costs_less(catalog: Catalog) -> None:
    tiny = dataclasses.replace(catalog.gifts[0], price=0.001)
    result = suggest_gifts(Catalog(gifts=(tiny,)), occasion="birthday", budget=0.005, recipient="a friend")
    assert isinstance(result, NoFit)
    assert "below the minimum" in result.message()


# --- what the description rules out ------------------------------------------------------------------


@pytest.mark.parametrize(
    "recipient",
    ["someone who hates board games", "no board games", "my friend doesn't like board games"],
)
def test_a_disliked_interest_is_never_suggested(catalog: Catalog, recipient: str) -> None:
    result = _suggest(occasion="birthday", budget=100, recipient=recipient, count=20)
    assert len(result.gifts) == 20
    assert not [item.id for item in result.gifts if "board games" in catalog.by_id(item.id).tags]
    assert all("board games" not in item.reason for item in result.gifts)


def test_a_like_after_a_dislike_still_counts(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=60, recipient="hates board games but loves puzzles")
    tags = [catalog.by_id(item.id).tags for item in result.gifts]
    assert "puzzles" in tags[0]
    assert not [gift_tags for gift_tags in tags if "board games" in gift_tags]
    assert "Matches 'puzzles' from your description." in result.gifts[0].reason


def test_no_nonsense_cook_still_cooks(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=60, recipient="my no-nonsense cook of a dad")
    assert "cooking" in catalog.by_id(result.gifts[0].id).tags
    assert result.notice is None


def test_when_everything_is_ruled_out_the_notice_says_so(catalog: Catalog) -> None:
    coffee_only = Catalog(gifts=tuple(gift for gift in catalog.gifts if "coffee" in gift.tags))
    result = suggest_gifts(coffee_only, occasion="birthday", budget=500, recipient="hates coffee")
    assert isinstance(result, Suggestions)
    assert result.gifts == []
    assert result.notice is not None
    assert "'coffee'" in result.notice
    assert result.to_text() == result.notice


# --- reasons quote the description -------------------------------------------------------------------


def test_reasons_quote_the_words_that_matched(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=60, recipient="loves Hiking and coffee")
    for item in result.gifts:
        tags = catalog.by_id(item.id).tags
        said = [word for word in ("hiking", "coffee") if word in tags]
        assert said, item.id
        assert f"Matches '{said[0]}'" in item.reason, item.reason
        assert "from your description" in item.reason
    assert result.notice is None


def test_reasons_name_the_catalog_phrase_for_a_synonym() -> None:
    result = _suggest(occasion="holiday", budget=100, recipient="my brother, a huge sci-fi fan", count=1)
    assert "Matches 'sci-fi' (science fiction) from your description." in result.gifts[0].reason


# --- interests the catalog cannot serve ---------------------------------------------------------------


@pytest.mark.parametrize("budget", [60, 200])
def test_a_missing_hobby_is_said_plainly_with_the_closest(catalog: Catalog, budget: int) -> None:
    result = _suggest(occasion="birthday", budget=budget, recipient="my friend who likes sailing")
    closest = closest_table()["sailing"]
    assert result.notice is not None
    assert "Nothing in the catalog matches 'sailing'" in result.notice
    assert all(phrase in result.notice for phrase in closest)
    assert result.gifts
    for item in result.gifts:
        gift = catalog.by_id(item.id)
        assert set(closest) & set(gift.tags), item.id
        assert "The catalog has nothing for 'sailing'" in item.reason
        assert "Matches" not in item.reason
    assert result.to_structured()["notice"] == result.notice
    assert result.to_text().startswith(result.notice + "\n\n1. ")


def test_a_real_match_outranks_a_stand_in(catalog: Catalog) -> None:
    result = _suggest(occasion="birthday", budget=60, recipient="my dad who likes sailing and coffee")
    assert "coffee" in catalog.by_id(result.gifts[0].id).tags
    assert result.notice is not None
    assert "'sailing'" in result.notice
    assert "'coffee'" not in result.notice


def test_an_unknown_stated_interest_gets_general_picks_and_says_so() -> None:
    result = _suggest(occasion="birthday", budget=60, recipient="loves origami")
    assert result.notice is not None
    assert result.notice.startswith("Nothing in the catalog matches 'origami'.")
    categories = {item.category for item in result.gifts}
    assert "general picks" in result.notice
    assert any(category in result.notice for category in categories)


def test_an_interest_priced_out_names_the_budget_that_would_serve_it(catalog: Catalog) -> None:
    hiking = extract_interests("hiking")
    cheapest = min(gift.price for gift in catalog.gifts if "hiking" in gift.tags)
    budget = cheapest - 1
    result = _suggest(occasion="birthday", budget=budget, recipient="loves hiking")
    assert result.notice is not None
    assert f"Nothing within the ${budget:.2f} budget matches 'hiking'" in result.notice
    # The cheapest gift matching "hiking" at all, which may mention it only in its description.
    matching = [gift.price for gift in catalog.gifts if match_gift(hiking, gift).score > 0]
    assert min(matching) > budget
    assert f"the cheapest gift that does costs ${min(matching):.2f}" in result.notice


def test_words_that_are_not_stated_interests_get_no_notice() -> None:
    assert _suggest(occasion="baby shower", budget=50, recipient="my coworker Dana").notice is None
    assert list(_suggest(occasion="birthday", budget=50, recipient="my coworker Dana").to_structured()) == [
        "gifts"
    ]


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
    assert len(result.gifts) <= count
    assert all(item.price <= budget for item in result.gifts)
    assert len({item.id for item in result.gifts}) == len(result.gifts)
    gifts = [CATALOG.by_id(item.id) for item in result.gifts]
    age = age_hint(recipient)
    context = read_context(recipient)
    for_children = "kids" in context.traits or "baby_shower" in (normalize_occasion(occasion), context.event)
    if age is not None and not for_children:
        assert all(gift.suits_age(age) for gift in gifts)
    interests = extract_interests(recipient)
    assert not [gift.id for gift in gifts if excluded(interests, gift)]
    # Fewer gifts than asked for is allowed (unrelated filler is left out), but never silently.
    assert len(result.gifts) == count or result.notice


def test_a_suggester_answers_as_suggest_gifts_does_reading_each_description_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bulk run's shortcut: one reading per description, a pick per budget, the same answers."""
    from giftgenius import suggest

    reads: list[str] = []

    def counted(recipient: str) -> Interests:
        reads.append(recipient)
        return extract_interests(recipient)

    suggester = suggest.Suggester(CATALOG, "Birthday")
    descriptions = [
        "colleague who likes hiking, coffee",
        "nephew, 8, who loves dinosaurs but hates puzzles",
        "someone who likes origami and fishing",
    ]
    expected = {
        (description, budget, count): suggest_gifts(
            CATALOG, occasion="Birthday", budget=budget, recipient=description, count=count
        )
        for description in descriptions
        for budget in (0.005, 3, 20, 45, 300)
        for count in (1, 3)
    }
    monkeypatch.setattr(suggest, "extract_interests", counted)
    for (description, budget, count), answer in expected.items():
        assert suggester.suggest(budget=budget, recipient=description, count=count) == answer
    assert reads == descriptions, "each description is read once, whatever the budget"
    with pytest.raises(SuggestionInputError, match="budget"):
        suggester.suggest(budget=-1, recipient=descriptions[0])
