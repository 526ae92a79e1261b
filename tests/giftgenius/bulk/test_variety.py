"""Bulk picks: varied across the run, within age, and honest when a budget is too small to vary."""

from __future__ import annotations

from collections import Counter

from giftgenius.bulk.pipeline import VARIETY_MIN_FITTING, VARIETY_SHARE
from tests.giftgenius.bulk.support import CATALOG, generated_csv, make_csv, run

BY_NAME = {gift.name: gift for gift in CATALOG.gifts}


async def test_no_gift_goes_to_more_than_its_share_of_the_people() -> None:
    result, _progress = await run(generated_csv(2_000))
    given = Counter(gift["name"] for person in result.people for gift in person.gifts)
    assert max(given.values()) <= 2_000 * VARIETY_SHARE
    assert result.unvaried == {}
    assert result.to_json()["summary"]["budgetsTooSmallToVary"] == []
    assert result.with_gifts == 2_000


async def test_a_budget_too_small_to_vary_is_said() -> None:
    rows = [[f"Person {index}", "Ops", "coffee", "14"] for index in range(40)]
    result, _progress = await run(make_csv(rows))
    fitting = [gift for gift in CATALOG.gifts if gift.price <= 14 and gift.age_max >= 18]
    assert len(fitting) < VARIETY_MIN_FITTING
    given = Counter(gift["name"] for person in result.people for gift in person.gifts)
    assert max(given.values()) > 40 * VARIETY_SHARE, "too few gifts to vary: they repeat"
    assert result.unvaried == {14.0: 40}
    assert result.to_json()["summary"]["budgetsTooSmallToVary"] == [{"budget": 14.0, "people": 40}]
    assert "40 people's budgets ($14.00) fit too few gifts to vary" in result.summary_text()


async def test_adults_get_no_childrens_gifts_unless_their_row_says_kids() -> None:
    text = make_csv(
        [
            ["Ada", "Eng", "dinosaurs; science; building", "60"],
            ["Bo", "Eng", "kids; board games", "60"],
        ]
    )
    result, _progress = await run(text, count=5)
    ada, bo = result.people
    assert ada.gifts
    assert all(BY_NAME[gift["name"]].age_max >= 18 for gift in ada.gifts)
    assert any(
        BY_NAME[gift["name"]].age_max < 18 or "family" in BY_NAME[gift["name"]].tags for gift in bo.gifts
    )


async def test_a_short_list_says_why() -> None:
    result, _progress = await run(make_csv([["Ada", "Eng", "golf", "25"]]), count=5)
    (ada,) = result.people
    assert 0 < len(ada.gifts) < 5
    assert ada.note is not None
    assert ada.note.startswith(f"Only {len(ada.gifts)} gifts within $25.00")
