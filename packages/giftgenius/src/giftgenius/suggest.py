"""Rank catalog gifts for a recipient, an occasion and a budget.

The ranking is a transparent sum so every suggestion can explain itself:

* interest match (from :mod:`giftgenius.matching`): the dominant signal when the recipient text names
  interests, because a gift they care about beats a generic one;
* occasion fit: gifts tagged for the exact occasion beat gifts tagged "any", which beat the rest;
* budget use: spending 40-100% of the budget reads as generous without overshooting; cheaper gifts
  are still allowed but rank lower. A gift above the budget is never returned.

What the description rules out ("hates board games") is removed before ranking, never just ranked
lower. When a stated interest has nothing in the catalog (or nothing within budget), the result says
so in a ``notice`` and names what stands in, rather than passing other gifts off as matches.

Ties break on gift id, so the same inputs always give the same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from giftgenius.catalog import OCCASIONS, Catalog, Gift, normalize_occasion, occasion_phrase
from giftgenius.matching import (
    GiftMatch,
    Hit,
    Interests,
    age_hint,
    excluded,
    extract_interests,
    match_gift,
    serves,
)

__all__ = [
    "MAX_COUNT",
    "MIN_BUDGET",
    "OCCASIONS",
    "NoFit",
    "Suggester",
    "Suggestion",
    "SuggestionInputError",
    "Suggestions",
    "normalize_occasion",
    "suggest_gifts",
]

MAX_COUNT = 20
#: The smallest budget that can be served: prices are in whole cents.
MIN_BUDGET = 0.01

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


class SuggestionInputError(ValueError):
    """An argument of :func:`suggest_gifts` is unusable; the message says what to send instead.

    A ``ValueError`` so existing guards keep working, and its own class so the MCP tool can turn
    exactly these (and never a bug) into a tool error the model can read and act on.
    """


@dataclass(frozen=True, slots=True)
class Suggestions:
    """Ranked suggestions, best first; every price is within the requested budget.

    ``notice`` says what the list cannot do: a stated interest nothing in the catalog matches, and
    what stands in for it. It is None when every stated interest found a gift.
    """

    gifts: list[Suggestion]
    notice: str | None = None

    def to_structured(self) -> dict[str, Any]:
        """The JSON shape clients consume: ``{"gifts": [{"name", "price", "category", "reason"}]}``.

        ``notice`` is added only when there is one, so a plain list keeps its plain shape.
        """
        data: dict[str, Any] = {
            "gifts": [
                {"name": item.name, "price": item.price, "category": item.category, "reason": item.reason}
                for item in self.gifts
            ]
        }
        if self.notice is not None:
            data["notice"] = self.notice
        return data

    def to_text(self) -> str:
        """The notice, if any, then a numbered, readable list with prices and reasons."""
        lines: list[str] = []
        for number, item in enumerate(self.gifts, start=1):
            lines.append(f"{number}. {item.name} - ${item.price:.2f} ({item.category})")
            lines.append(f"   {item.reason}")
        listing = "\n".join(lines)
        if self.notice is None:
            return listing
        return f"{self.notice}\n\n{listing}" if listing else self.notice


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
    """Raise :class:`SuggestionInputError` naming the argument to change and a value that works.

    A positive budget below a cent is not refused here but answered with :class:`NoFit`, because the
    bulk analysis passes budgets from a CSV straight through and must get an answer, not an exception.
    """
    if not isinstance(occasion, str) or not occasion.strip():
        raise SuggestionInputError(
            "occasion must name the occasion, e.g. 'birthday'; known occasions: " + ", ".join(OCCASIONS)
        )
    if not isinstance(recipient, str) or not recipient.strip():
        raise SuggestionInputError(
            "recipient must describe who the gift is for, e.g. 'my sister, 30, who loves hiking and coffee'"
        )
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget):
        raise SuggestionInputError(f"budget must be a finite number of US dollars, e.g. 50; got {budget!r}")
    if budget <= 0:
        raise SuggestionInputError(
            f"budget must be at least {MIN_BUDGET} US dollars (one cent), e.g. 50; got {budget!r}"
        )
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise SuggestionInputError(f"count must be a whole number from 1 to {MAX_COUNT}; got {count!r}")


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


def _quoted(hit: Hit) -> str:
    """The description's words in quotes, with the catalog phrase when it reads differently."""
    return f"'{hit.quote}'" if hit.quote == hit.label else f"'{hit.quote}' ({hit.label})"


def _interest_reason(gift: Gift, match: GiftMatch, interests: Interests) -> str:
    """Which words of the description the gift matched, or that it only comes closest to them."""
    real = tuple(_quoted(hit) for hit in match.hits if not hit.closest)
    near = [hit for hit in match.hits if hit.closest]
    sentences: list[str] = []
    if real:
        sentences.append(f"Matches {_join(real[:3])} from your description.")
    if near:
        sentences.append(
            f"The catalog has nothing for '{near[0].quote}'; this {near[0].label} gift is the closest."
        )
    if sentences:
        return " ".join(sentences)
    if interests:
        return f"A versatile {gift.category} gift to round out the list."
    return f"A versatile {gift.category} gift."


def _reason(gift: Gift, match: GiftMatch, interests: Interests, occasion: str, budget: float) -> str:
    interest = _interest_reason(gift, match, interests)
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


def _cheapest_no_fit(pool: tuple[Gift, ...], reason: str) -> NoFit:
    cheapest = min(pool, key=lambda gift: (gift.price, gift.id))
    return NoFit(reason=reason, cheapest_price=cheapest.price, cheapest_name=cheapest.name)


def _no_fit(pool: tuple[Gift, ...], occasion: str, budget: float, age: int | None) -> NoFit:
    who = f" suitable for a {age}-year-old" if age is not None else ""
    where = f"for {occasion_phrase(occasion)}"
    return _cheapest_no_fit(pool, f"No gift in the catalog{who} fits a budget of ${budget:.2f} {where}.")


def _below_a_cent(pool: tuple[Gift, ...], budget: float) -> NoFit:
    """A refusal for a budget under a cent, quoted as given: rounding it would print "$0.00"."""
    return _cheapest_no_fit(pool, f"A budget of ${budget:g} is below the minimum of ${MIN_BUDGET:.2f}.")


def _eligible(catalog: Catalog, age: int | None, interests: Interests) -> tuple[Gift, ...]:
    """Gifts for the stated age (every gift when none suits it) that the description does not rule out."""
    pool = catalog.gifts if age is None else tuple(gift for gift in catalog.gifts if gift.suits_age(age))
    return tuple(gift for gift in pool or catalog.gifts if not excluded(interests, gift))


@dataclass(frozen=True, slots=True)
class _Served:
    """What serves one liked interest, whatever the budget: the price of the cheapest
    suggestable gift that matches it (None: none does), and whether any gift in the catalog
    does (what age and dislikes leave aside included)."""

    cheapest: float | None
    in_catalog: bool


def _unserved(reading: _Reading, index: int, budget: float) -> str | None:
    """A sentence for a stated interest no suggestable gift matches, or None when some gift does.

    Only interests said with a liking cue ("likes origami") or known to be missing from the catalog
    ("fishing") count: other leftover words ("my coworker Dana") are not interests worth a notice.
    The sentence says why: nothing in the catalog, nothing within budget (and what would be), or
    nothing that their age and dislikes leave.
    """
    interest = reading.interests.liked[index]
    quoted = f"'{interest.text}'"
    if interest.closest:
        closest = _join(interest.phrases)
        return f"Nothing in the catalog matches {quoted}; the closest it has are {closest} gifts."
    if not interest.stated:
        return None
    served = reading.served(index)
    if served.cheapest is not None and served.cheapest <= budget:
        return None
    if served.cheapest is not None:
        return (
            f"Nothing within the ${budget:.2f} budget matches {quoted}; "
            f"the cheapest gift that does costs ${served.cheapest:.2f}."
        )
    if served.in_catalog:
        return f"The catalog's gifts for {quoted} are all ruled out by their age or what they dislike."
    return f"Nothing in the catalog matches {quoted}."


def _notice(reading: _Reading, budget: float, picked: list[tuple[Gift, GiftMatch]]) -> str | None:
    """What the list cannot do, and what it offers instead when no suggestion matches anything."""
    sentences = [
        sentence
        for index in range(len(reading.interests.liked))
        if (sentence := _unserved(reading, index, budget)) is not None
    ]
    if not sentences:
        return None
    if not any(match.hits for _gift, match in picked):
        categories = tuple(dict.fromkeys(gift.category for gift, _match in picked))
        sentences.append(f"The suggestions are general picks instead ({_join(categories[:3])}).")
    return " ".join(sentences)


def _all_ruled_out(interests: Interests) -> Suggestions:
    dislikes = _join(tuple(f"'{interest.text}'" for interest in interests.disliked))
    return Suggestions(
        gifts=[], notice=f"Every gift in the catalog matches something ruled out ({dislikes}); none is left."
    )


@dataclass(frozen=True, slots=True)
class _Scored:
    """A gift of the pool, its match, and its score but for the part the budget adds."""

    partial: float  # interest match + occasion fit
    age: float  # the age adjustment, added last (the order of the sum is part of the answer)
    gift: Gift
    match: GiftMatch
    theme: str  # its main matched interest or category, for spreading the picks


class _Reading:
    """A description read against a catalog at an occasion: everything a suggestion needs
    except the budget and the count.

    Reading is the costly part, so a reading is kept and asked again at other budgets
    (`Suggester`). What it works out of the gifts (how each matches, what serves each
    interest) it works out the first time it is asked, for the gifts asked about: a
    description seen once at a small budget costs the affordable gifts only.
    """

    def __init__(self, catalog: Catalog, occasion: str, recipient: str) -> None:
        self.catalog = catalog
        self.occasion = occasion
        self.age = age_hint(recipient)
        self.interests = extract_interests(recipient)
        self.pool = _eligible(catalog, self.age, self.interests)
        self._scored: dict[str, _Scored] = {}
        self._served: dict[int, _Served] = {}

    def scored(self, gift: Gift) -> _Scored:
        """A gift of the pool with its match and its score but for the budget's part."""
        row = self._scored.get(gift.id)
        if row is None:
            match = match_gift(self.interests, gift)
            row = self._scored[gift.id] = _Scored(
                partial=match.score + _occasion_score(gift, self.occasion),
                age=_age_adjustment(gift, self.occasion, self.age),
                gift=gift,
                match=match,
                theme=_theme(gift, match),
            )
        return row

    def served(self, index: int) -> _Served:
        """What serves the liked interest at `index`, whatever the budget."""
        found = self._served.get(index)
        if found is None:
            interest = self.interests.liked[index]
            prices = [gift.price for gift in self.pool if serves(interest, gift)]
            in_catalog = bool(prices) or any(serves(interest, gift) for gift in self.catalog.gifts)
            found = self._served[index] = _Served(min(prices) if prices else None, in_catalog)
        return found


class Suggester:
    """Suggestions from one catalog at one occasion, each distinct description read once.

    A bulk run asks for thousands of people who share a few hundred descriptions at a handful
    of budgets: the reading (interests, age, what is ruled out, how each gift matches) is
    kept per description, and only the pick is made per budget.
    """

    def __init__(self, catalog: Catalog, occasion: str) -> None:
        self._catalog = catalog
        self._occasion = occasion
        self._readings: dict[str, _Reading] = {}

    def suggest(self, *, budget: float, recipient: str, count: int = 5) -> Suggestions | NoFit:
        """What :func:`suggest_gifts` answers for this catalog and occasion."""
        _validate(self._occasion, budget, recipient, count)
        occasion = normalize_occasion(self._occasion)
        reading = self._readings.get(recipient)
        if reading is None:
            reading = self._readings[recipient] = _Reading(self._catalog, occasion, recipient)
        return _pick(reading, occasion, float(budget), count)


def suggest_gifts(
    catalog: Catalog, *, occasion: str, budget: float, recipient: str, count: int = 5
) -> Suggestions | NoFit:
    """Up to ``count`` gifts for ``recipient`` at ``occasion`` costing at most ``budget`` US dollars.

    ``occasion`` is normalized ("Baby shower" -> "baby_shower", "xmas" -> "holiday"); an occasion
    outside the vocabulary is still served, favouring gifts that suit any occasion. A stated or implied
    age in ``recipient`` ("8-year-old", "toddler", "teen") limits gifts to that age, and anything it
    rules out ("hates board games") is never suggested. Returns :class:`NoFit` when no eligible gift
    is within budget or the budget is below :data:`MIN_BUDGET`; raises :class:`SuggestionInputError`
    (a ``ValueError``) for invalid input.
    """
    return Suggester(catalog, occasion).suggest(budget=budget, recipient=recipient, count=count)


def _pick(reading: _Reading, occasion: str, budget: float, count: int) -> Suggestions | NoFit:
    """The suggestions of a reading at a budget: the affordable gifts, ranked and spread."""
    interests, pool = reading.interests, reading.pool
    if not pool:
        return _all_ruled_out(interests)
    if budget < MIN_BUDGET:
        return _below_a_cent(pool, budget)
    affordable = [reading.scored(gift) for gift in pool if gift.price <= budget]
    if not affordable:
        return _no_fit(pool, occasion, budget, reading.age)

    ranked = [
        (round(row.partial + _budget_score(row.gift.price, budget) + row.age, 6), row) for row in affordable
    ]
    picked = _pick_diverse(ranked, count, spread=len(interests.liked) != 1)
    return Suggestions(
        gifts=[
            Suggestion(
                id=gift.id,
                name=gift.name,
                price=gift.price,
                category=gift.category,
                reason=_reason(gift, match, interests, occasion, budget),
            )
            for gift, match in picked
        ],
        notice=_notice(reading, budget, picked),
    )


def _theme(gift: Gift, match: GiftMatch) -> str:
    return match.matched[0] if match.matched else gift.category


def _pick_diverse(
    ranked: list[tuple[float, _Scored]], count: int, *, spread: bool
) -> list[tuple[Gift, GiftMatch]]:
    """Greedy pick of the best gifts; with ``spread``, each already-covered theme costs a little.

    Without spreading, "hiking, coffee and photography" returns five coffee gifts because coffee
    gifts happen to score slightly higher, and a recipient with no stated interests gets five gifts
    from one category. With a single stated interest there is nothing to spread across, so the list
    is the plain ranking and stays on that interest. Ties break on gift id.

    Each pick walks the ranking from the top and stops at the first gift whose own score is
    below the best one found: a penalty only lowers a score, so no later gift can win.
    """
    penalty = _REPEAT_THEME_PENALTY if spread else 0.0
    remaining = sorted(ranked, key=lambda item: (-item[0], item[1].gift.id))
    picked: list[tuple[Gift, GiftMatch]] = []
    themes: dict[str, int] = {}
    while remaining and len(picked) < count:
        best_index, best = 0, (math.inf, "")
        for index, (score, row) in enumerate(remaining):
            if -score > best[0]:
                break
            key = (-(score - penalty * themes.get(row.theme, 0)), row.gift.id)
            if key < best:
                best_index, best = index, key
        row = remaining.pop(best_index)[1]
        themes[row.theme] = themes.get(row.theme, 0) + 1
        picked.append((row.gift, row.match))
    return picked
