"""Rank catalog gifts for a recipient, an occasion and a budget.

The ranking is a transparent sum so every suggestion can explain itself:

* interest match (from :mod:`giftgenius.matching`): the dominant signal when the recipient text names
  interests, because a gift they care about beats a generic one;
* occasion fit: gifts tagged for the exact occasion beat gifts tagged "any", which beat the rest;
* budget use: spending 40-100% of the budget reads as generous without overshooting; cheaper gifts
  are still allowed but rank lower. A gift above the budget is never returned.

Ties break on gift id, so the same inputs always give the same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from giftgenius.catalog import OCCASIONS, Catalog, Gift, normalize_occasion, occasion_phrase
from giftgenius.matching import GiftMatch, Interests, age_hint, extract_interests, match_gift

__all__ = [
    "MAX_COUNT",
    "OCCASIONS",
    "NoFit",
    "Suggestion",
    "Suggestions",
    "normalize_occasion",
    "suggest_gifts",
]

MAX_COUNT = 20

_EXACT_OCCASION = 4.0
_ANY_OCCASION = 2.0
_BUDGET_SWEET_SPOT = 0.4  # share of the budget from which a gift counts as a full-value choice
_BUDGET_FIT = 2.0
_BUDGET_SHARE_BONUS = 0.5
# Without an age hint we assume an adult recipient and push toys for young children down the list.
_CHILD_ONLY_AGE = 13
_CHILD_ONLY_PENALTY = 4.0
_BABY_SHOWER_BONUS = 2.0
# Ranking cost of each earlier pick sharing a gift's theme (its main matched interest or category).
_REPEAT_THEME_PENALTY = 3.0


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One recommended gift with a human-readable reason for recommending it."""

    id: str
    name: str
    price: float
    category: str
    reason: str


@dataclass(frozen=True, slots=True)
class Suggestions:
    """Ranked suggestions, best first; every price is within the requested budget."""

    gifts: list[Suggestion]

    def to_structured(self) -> dict[str, Any]:
        """The JSON shape clients consume: ``{"gifts": [{"name", "price", "category", "reason"}]}``."""
        return {
            "gifts": [
                {"name": item.name, "price": item.price, "category": item.category, "reason": item.reason}
                for item in self.gifts
            ]
        }

    def to_text(self) -> str:
        """A numbered, readable list with prices and reasons."""
        lines: list[str] = []
        for number, item in enumerate(self.gifts, start=1):
            lines.append(f"{number}. {item.name} - ${item.price:.2f} ({item.category})")
            lines.append(f"   {item.reason}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class NoFit:
    """Nothing fits the budget; says what the cheapest eligible gift costs so the budget can be raised."""

    reason: str
    cheapest_price: float
    cheapest_name: str

    def message(self) -> str:
        """A complete explanation with the smallest budget that would produce a suggestion."""
        price = f"${self.cheapest_price:.2f}"
        return (
            f"{self.reason} The cheapest option is {self.cheapest_name} at {price}; "
            f"raise the budget to at least {price}."
        )

    def to_text(self) -> str:
        """Same as :meth:`message`, so callers can render either result type the same way."""
        return self.message()


def _validate(occasion: str, budget: float, recipient: str, count: int) -> None:
    if not isinstance(occasion, str) or not occasion.strip():
        raise ValueError(
            "occasion must be a non-empty string such as 'birthday'; known occasions: " + ", ".join(OCCASIONS)
        )
    if not isinstance(recipient, str) or not recipient.strip():
        raise ValueError(
            "recipient must describe who the gift is for, e.g. 'my sister, 30, who loves hiking and coffee'"
        )
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget):
        raise ValueError(f"budget must be a finite number of US dollars, e.g. 50; got {budget!r}")
    if budget <= 0:
        raise ValueError(f"budget must be greater than 0 US dollars, e.g. 50; got {budget!r}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be a whole number from 1 to {MAX_COUNT}; got {count!r}")


def _occasion_score(gift: Gift, occasion: str) -> float:
    if occasion in gift.occasions:
        return _EXACT_OCCASION
    if "any" in gift.occasions:
        return _ANY_OCCASION
    return 0.0


def _budget_score(price: float, budget: float) -> float:
    share = price / budget
    return _BUDGET_FIT * min(1.0, share / _BUDGET_SWEET_SPOT) + _BUDGET_SHARE_BONUS * share


def _age_adjustment(gift: Gift, occasion: str, age: int | None) -> float:
    if age is not None:
        return 0.0  # already filtered to the stated age
    if occasion == "baby_shower":
        return _BABY_SHOWER_BONUS if gift.age_min == 0 else 0.0
    return -_CHILD_ONLY_PENALTY if gift.age_max < _CHILD_ONLY_AGE else 0.0


def _join(items: tuple[str, ...]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _reason(gift: Gift, match: GiftMatch, interests: Interests, occasion: str, budget: float) -> str:
    if match.matched:
        interest = f"Matches their interest in {_join(match.matched[:3])}."
    elif interests:
        interest = f"A versatile {gift.category} gift to round out the list."
    else:
        interest = f"A versatile {gift.category} gift."
    phrase = occasion_phrase(occasion)
    if occasion in gift.occasions:
        fit = f"A natural fit for {phrase}."
    elif "any" in gift.occasions:
        fit = f"Suits any occasion, including {phrase}."
    else:
        fit = f"Less traditional for {phrase}, but still a welcome surprise."
    share = gift.price / budget
    if share >= _BUDGET_SWEET_SPOT:
        spend = f"At ${gift.price:.2f} it uses {round(share * 100)}% of the ${budget:.2f} budget."
    else:
        spend = f"At ${gift.price:.2f} it leaves most of the ${budget:.2f} budget to spare."
    return f"{interest} {fit} {spend}"


def _no_fit(pool: tuple[Gift, ...], occasion: str, budget: float, age: int | None) -> NoFit:
    cheapest = min(pool, key=lambda gift: (gift.price, gift.id))
    who = f" suitable for a {age}-year-old" if age is not None else ""
    reason = f"No gift in the catalog{who} fits a budget of ${budget:.2f} for {occasion_phrase(occasion)}."
    return NoFit(reason=reason, cheapest_price=cheapest.price, cheapest_name=cheapest.name)


def suggest_gifts(
    catalog: Catalog, *, occasion: str, budget: float, recipient: str, count: int = 5
) -> Suggestions | NoFit:
    """Up to ``count`` gifts for ``recipient`` at ``occasion`` costing at most ``budget`` US dollars.

    ``occasion`` is normalized ("Baby shower" -> "baby_shower", "xmas" -> "holiday"); an occasion
    outside the vocabulary is still served, favouring gifts that suit any occasion. A stated or implied
    age in ``recipient`` ("8-year-old", "toddler", "teen") limits gifts to that age. Returns
    :class:`NoFit` when no eligible gift is within budget; raises ``ValueError`` for invalid input.
    """
    _validate(occasion, budget, recipient, count)
    normalized = normalize_occasion(occasion)
    age = age_hint(recipient)
    pool = catalog.gifts if age is None else tuple(gift for gift in catalog.gifts if gift.suits_age(age))
    if not pool:
        pool = catalog.gifts
    affordable = [gift for gift in pool if gift.price <= budget]
    if not affordable:
        return _no_fit(pool, normalized, float(budget), age)

    interests = extract_interests(recipient)
    scored: list[tuple[float, Gift, GiftMatch]] = []
    for gift in affordable:
        match = match_gift(interests, gift)
        total = (
            match.score
            + _occasion_score(gift, normalized)
            + _budget_score(gift.price, budget)
            + _age_adjustment(gift, normalized, age)
        )
        scored.append((round(total, 6), gift, match))
    return Suggestions(
        gifts=[
            Suggestion(
                id=gift.id,
                name=gift.name,
                price=gift.price,
                category=gift.category,
                reason=_reason(gift, match, interests, normalized, float(budget)),
            )
            for gift, match in _pick_diverse(scored, count, spread=len(interests.groups) != 1)
        ]
    )


def _theme(gift: Gift, match: GiftMatch) -> str:
    return match.matched[0] if match.matched else gift.category


def _pick_diverse(
    scored: list[tuple[float, Gift, GiftMatch]], count: int, *, spread: bool
) -> list[tuple[Gift, GiftMatch]]:
    """Greedy pick of the best gifts; with ``spread``, each already-covered theme costs a little.

    Without spreading, "hiking, coffee and photography" returns five coffee gifts because coffee
    gifts happen to score slightly higher, and a recipient with no stated interests gets five gifts
    from one category. With a single stated interest there is nothing to spread across, so the list
    is the plain ranking and stays on that interest.
    """
    penalty = _REPEAT_THEME_PENALTY if spread else 0.0
    remaining = sorted(scored, key=lambda row: (-row[0], row[1].id))
    picked: list[tuple[Gift, GiftMatch]] = []
    themes: dict[str, int] = {}
    while remaining and len(picked) < count:
        best_index = min(
            range(len(remaining)),
            key=lambda i: (
                -(remaining[i][0] - penalty * themes.get(_theme(remaining[i][1], remaining[i][2]), 0)),
                remaining[i][1].id,
            ),
        )
        _score, gift, match = remaining.pop(best_index)
        theme = _theme(gift, match)
        themes[theme] = themes.get(theme, 0) + 1
        picked.append((gift, match))
    return picked
