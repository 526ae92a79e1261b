"""Rank catalog gifts for a recipient, an occasion and a budget.

The ranking is a transparent sum so every suggestion can explain itself:

* interest match (from :mod:`giftgenius.matching`): the dominant signal when the recipient text names
  interests, because a gift they care about beats a generic one;
* occasion fit: gifts tagged for the exact occasion beat gifts tagged "any", which beat the rest;
* budget use: spending 40-100% of the budget reads as generous without overshooting; cheaper gifts
  are still allowed but rank lower. A gift above the budget is never returned.

What the description rules out ("hates board games") is removed before ranking, never just ranked
lower, and so is what the person cannot use: gifts outside their age (an adult gets no children's
toys unless they have kids), food or drink their diet or sobriety rules out (tags such as "contains
meat", "contains alcohol"), pet gear for a pet they do not have ("needs a dog"), and a gift made for
one event (a retirement plaque) at any other occasion.

Every pick must relate to something said. One that matches no interest still has to suit the
relationship (an office gift for a boss), their age (made for teens), their kids or pets, or the
occasion (made for a baby shower, or for the retirement the description mentions); otherwise it is
left out, because five unrelated gifts are worse than three good ones, and the ``notice`` says
plainly that fewer than asked fit. Only when the description gives nothing any gift relates to does
the list fall back to general picks, and says so. When a stated interest has nothing in the catalog
(or nothing within budget), the notice says that too and names what stands in, rather than passing
other gifts off as matches.

Structured hints (`Hints`: interests, things to avoid, age or age group, relationship) come from
the model, which has the whole conversation; where they say something they take precedence over
what is read from the free-text description.

Ties break on gift id, so the same inputs always give the same answer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from giftgenius.catalog import (
    GENERAL_OCCASIONS,
    OCCASIONS,
    Catalog,
    Gift,
    normalize_occasion,
    occasion_phrase,
)
from giftgenius.matching import (
    Context,
    GiftMatch,
    Hit,
    Interests,
    age_hint,
    excluded,
    extract_interests,
    given_interests,
    match_gift,
    read_context,
    relationship_kind,
    serves,
    stem,
)

__all__ = [
    "AGE_GROUPS",
    "MAX_COUNT",
    "MIN_BUDGET",
    "OCCASIONS",
    "Hints",
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
# Ranking credit for a gift that relates to the person (relationship, age, occasion) without
# matching an interest: it ranks above a general pick, below a real match.
_RELATED_BONUS = 2.0

#: The age groups a hint may name, each with the age the catalog's age ranges are checked
#: against; an adult is not one age, so only children's gifts are kept from them.
AGE_GROUPS: Mapping[str, int | None] = {"baby": 1, "child": 8, "teen": 15, "adult": None, "senior": 70}
#: Gifts whose age range ends below this are children's gifts.
_ADULT = 18
#: Gifts whose age range ends below this are made for the young (teens included), so they relate
#: to a young recipient even when they match no interest.
_YOUTH = 20
#: The oldest age a hint may state; the catalog's ranges end at 99, and older ages are read as 99.
_MAX_AGE_HINT = 130

#: Tags saying what a gift contains, by the trait that rules it out (see `read_context`).
_RULED_OUT_BY: Mapping[str, frozenset[str]] = {
    "vegan": frozenset(
        {
            "contains meat",
            "contains fish",
            "contains dairy",
            "contains eggs",
            "contains honey",
            "contains gelatin",
            "made with leather",
            "made with wool",
            "made with silk",
        }
    ),
    "vegetarian": frozenset({"contains meat", "contains fish", "contains gelatin"}),
    "sober": frozenset({"contains alcohol", "for drinkers"}),
}
#: Tags of gifts that need a pet, with the pets that satisfy them.
_NEEDS_PET: Mapping[str, frozenset[str]] = {
    "needs a dog": frozenset({"dog"}),
    "needs a cat": frozenset({"cat"}),
    "needs a pet": frozenset({"dog", "cat", "pet"}),
}
#: Tags of gifts that suit a trait, for picks that match no interest ("zero proof" for "sober"; not
#: "alcohol-free", whose "alcohol" the synonym table reads as wine, beer and spirits).
_SUITS_TRAIT: Mapping[str, tuple[frozenset[str], str]] = {
    "vegan": (frozenset({"vegan"}), "vegan, as they are"),
    "vegetarian": (frozenset({"vegan", "vegetarian"}), "vegetarian, as they are"),
    "sober": (frozenset({"zero proof"}), "zero proof, as they do not drink"),
}
#: What a gift must have to suit a kind of relationship when it matches no interest: tags, or
#: occasions it is listed for, and the words that say so.
_SUITS_RELATIONSHIP: Mapping[str, tuple[frozenset[str], frozenset[str], str]] = {
    "work": (frozenset({"office"}), frozenset(), "a gift for their desk at work"),
    "father": (frozenset(), frozenset({"fathers_day"}), "a classic gift for a dad"),
    "mother": (frozenset(), frozenset({"mothers_day"}), "a classic gift for a mom"),
    "partner": (frozenset({"romance"}), frozenset({"valentines", "anniversary"}), "a gift for a partner"),
    "teacher": (frozenset(), frozenset({"thank_you"}), "a classic thank-you gift"),
}
#: Pet words as the matching stems them, so someone who loves dogs counts as a dog person.
_PET_STEMS: Mapping[str, str] = {"dog": stem("dogs"), "cat": stem("cats"), "pet": stem("pets")}


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
    what stands in for it, or that fewer gifts than asked for fit. It is None when every stated
    interest found a gift and the list is full.
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


@dataclass(frozen=True, slots=True)
class Hints:
    """What the model knows about the recipient from the conversation, passed as structured facts.

    Each says something only when set, and then takes precedence over what the free-text
    description says: ``interests`` replace the interests read from it, ``avoid`` adds to what it
    rules out, ``age`` (or else ``age_group``, one of `AGE_GROUPS`) replaces the age it states or
    implies, and ``relationship`` ("boss", "nephew") replaces the one it names.
    """

    interests: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    age: int | None = None
    age_group: str | None = None
    relationship: str | None = None


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


def _validate_hints(hints: Hints) -> None:
    """Raise :class:`SuggestionInputError` naming the hint to change, as `_validate` does."""
    for name, items in (("interests", hints.interests), ("avoid", hints.avoid)):
        if not all(isinstance(item, str) for item in items):
            raise SuggestionInputError(f"{name} must be a list of short texts, e.g. ['fishing', 'coffee']")
    age = hints.age
    if age is not None and (
        isinstance(age, bool) or not isinstance(age, int) or not 0 <= age <= _MAX_AGE_HINT
    ):
        raise SuggestionInputError(
            f"age must be a whole number of years from 0 to {_MAX_AGE_HINT}; got {age!r}"
        )
    if hints.age_group is not None and hints.age_group not in AGE_GROUPS:
        raise SuggestionInputError(
            f"age_group must be one of {', '.join(AGE_GROUPS)}; got {hints.age_group!r}"
        )
    if hints.relationship is not None and not isinstance(hints.relationship, str):
        raise SuggestionInputError("relationship must be a short text such as 'boss' or 'nephew'")


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


def _join(items: Sequence[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _quoted(hit: Hit) -> str:
    """The description's words in quotes, with the catalog phrase when it reads differently."""
    return f"'{hit.quote}'" if hit.quote == hit.label else f"'{hit.quote}' ({hit.label})"


def _interest_reason(gift: Gift, match: GiftMatch, interests: Interests, relation: str | None) -> str:
    """Which interests the gift matched (the hints given, or the description's words), that it
    only comes closest to them, or how it relates to the person otherwise."""
    given = list(dict.fromkeys(f'"{hit.quote}"' for hit in match.hits if hit.given and not hit.closest))
    real = tuple(_quoted(hit) for hit in match.hits if not hit.closest and not hit.given)
    near = [hit for hit in match.hits if hit.closest]
    sentences: list[str] = []
    if given:
        noun = "interest" if len(given) == 1 else "interests"
        sentences.append(f"Matches the {noun} {_join(given[:3])} you gave.")
    if real:
        sentences.append(f"Matches {_join(real[:3])} from your description.")
    if near:
        sentences.append(
            f"The catalog has nothing for '{near[0].quote}'; this {near[0].label} gift is the closest."
        )
    if sentences:
        return " ".join(sentences)
    if relation is not None:
        return relation
    if interests:
        return f"A versatile {gift.category} gift to round out the list."
    return f"A versatile {gift.category} gift."


def _reason(row: _Scored, interests: Interests, occasion: str, budget: float) -> str:
    gift = row.gift
    interest = _interest_reason(gift, row.match, interests, row.relation)
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


def _no_fit(pool: tuple[Gift, ...], occasion: str, budget: float, age: _Age) -> NoFit:
    if age.age is not None:
        who = f" suitable for a {age.age}-year-old"
    else:
        who = " suitable for an adult" if age.adult else ""
    where = f"for {occasion_phrase(occasion)}"
    return _cheapest_no_fit(pool, f"No gift in the catalog{who} fits a budget of ${budget:.2f} {where}.")


def _below_a_cent(pool: tuple[Gift, ...], budget: float) -> NoFit:
    """A refusal for a budget under a cent, quoted as given: rounding it would print "$0.00"."""
    return _cheapest_no_fit(pool, f"A budget of ${budget:g} is below the minimum of ${MIN_BUDGET:.2f}.")


@dataclass(frozen=True, slots=True)
class _Served:
    """What serves one liked interest, whatever the budget: the price of the cheapest
    suggestable gift that matches it (None: none does), and whether any gift in the catalog
    does (what age and dislikes leave aside included)."""

    cheapest: float | None
    in_catalog: bool


def _unserved(reading: _Reading, index: int, budget: float) -> str | None:
    """A sentence for a stated interest no suggestable gift matches, or None when some gift does.

    Only interests said with a liking cue ("likes origami"), given as hints, or known to be missing
    from the catalog ("sailing") count: other leftover words ("my coworker Dana") are not interests
    worth a notice. The sentence says why: nothing in the catalog, nothing within budget (and what
    would be), or nothing that their age and dislikes leave.
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


def _shortfall(reading: _Reading, budget: float, found: int, count: int) -> str | None:
    """A sentence when fewer gifts than asked for relate to what was said (or, for general picks,
    suit the person at all), or None."""
    if found >= count:
        return None
    gifts = "gift" if found == 1 else "gifts"
    if not reading.focused:
        return f"Only {found} {gifts} in the catalog suit them within the ${budget:.2f} budget."
    if found == 0:
        dearer = [row.gift.price for row in reading.related_rows() if row.gift.price > budget]
        cheapest = f"; the cheapest that does costs ${min(dearer):.2f}" if dearer else ""
        return f"No gift within the ${budget:.2f} budget fits what you described{cheapest}."
    return (
        f"Only {found} {gifts} within the ${budget:.2f} budget fit what you described; "
        "the rest of the catalog would be unrelated filler, so it is left out."
    )


def _notice(reading: _Reading, budget: float, picked: list[_Scored], count: int) -> str | None:
    """What the list cannot do: interests nothing serves, fewer gifts than asked for, or that the
    list is general picks because nothing said relates to any gift."""
    sentences = [
        sentence
        for index in range(len(reading.interests.liked))
        if (sentence := _unserved(reading, index, budget)) is not None
    ]
    if not reading.focused and sentences and picked:
        categories = tuple(dict.fromkeys(row.gift.category for row in picked))
        sentences.append(f"The suggestions are general picks instead ({_join(categories[:3])}).")
    shortfall = _shortfall(reading, budget, len(picked), count)
    if shortfall is not None:
        sentences.append(shortfall)
    return " ".join(sentences) if sentences else None


def _all_ruled_out(interests: Interests) -> Suggestions:
    if not interests.disliked:
        return Suggestions(gifts=[], notice="No gift in the catalog suits what the description rules out.")
    dislikes = _join(tuple(f"'{interest.text}'" for interest in interests.disliked))
    return Suggestions(
        gifts=[], notice=f"Every gift in the catalog matches something ruled out ({dislikes}); none is left."
    )


@dataclass(frozen=True, slots=True)
class _Scored:
    """A gift of the pool, its match, and its score but for the part the budget adds.

    ``relation`` says, for a gift that matches no interest, how it relates to the person anyway
    (their relationship, age, kids, pets or the occasion); None when it does not.
    """

    partial: float  # interest match + occasion fit
    age: float  # the age adjustment, added last (the order of the sum is part of the answer)
    gift: Gift
    match: GiftMatch
    theme: str  # its main matched interest or category, for spreading the picks
    relation: str | None

    @property
    def related(self) -> bool:
        """True when the gift matches an interest (or stands in for one) or relates otherwise."""
        return bool(self.match.hits) or self.relation is not None


@dataclass(frozen=True, slots=True)
class _Age:
    """Who the gifts must suit by age: one ``age`` to check ranges against, or ``adult`` (no
    children's gifts), or neither; ``children`` allows children's gifts all the same, for the
    kids they have or the baby on its way."""

    age: int | None
    adult: bool
    children: bool

    def allows(self, gift: Gift) -> bool:
        if self.children and gift.age_max < _ADULT:
            return True
        if self.age is not None:
            return gift.suits_age(self.age)
        return not self.adult or gift.age_max >= _ADULT


def _age_of(recipient: str, hints: Hints, context: Context, occasion: str) -> _Age:
    """The age the gifts must suit: a hinted age, else a hinted age group, else what the
    description states or implies. With none of those an adult is assumed, unless the
    relationship is one a child may have ("nephew", "daughter")."""
    children = "kids" in context.traits or "baby_shower" in (occasion, context.event)
    if hints.age is not None:
        return _Age(min(hints.age, 99), adult=False, children=children)
    if hints.age_group is not None:
        age = AGE_GROUPS[hints.age_group]
        return _Age(age, adult=age is None, children=children)
    age = age_hint(recipient)
    return _Age(age, adult=age is None and context.kind != "child", children=children)


def _context(recipient: str, hints: Hints) -> Context:
    """What the description and the hints say about the person, the hints first."""
    context = read_context(recipient, listed=hints.interests)
    traits = frozenset().union(*(read_context(item).traits for item in hints.interests))
    relationship = relationship_kind(hints.relationship) if hints.relationship else None
    given = Context(
        relationship=relationship[0] if relationship else None,
        kind=relationship[1] if relationship else None,
        traits=traits,
    )
    return context.merged(given)


@functools.lru_cache(maxsize=256)
def _suitable(
    catalog: Catalog, age: _Age, traits: frozenset[str], pets: frozenset[str], occasion: str
) -> tuple[Gift, ...]:
    """Gifts for an age (every gift when none suits it), diet, pets and occasion. Cached: a bulk
    run reads thousands of descriptions of people alike in all of these."""
    pool = tuple(gift for gift in catalog.gifts if age.allows(gift)) or catalog.gifts
    ruled_out = frozenset().union(*(_RULED_OUT_BY.get(trait, frozenset()) for trait in traits))
    return tuple(
        gift
        for gift in pool
        if not ruled_out.intersection(gift.tags)
        and all(pets & _NEEDS_PET[tag] for tag in gift.tags if tag in _NEEDS_PET)
        and gift.made_for in (None, occasion)
    )


class _Reading:
    """A description read against a catalog at an occasion: everything a suggestion needs
    except the budget and the count.

    Reading is the costly part, so a reading is kept and asked again at other budgets
    (`Suggester`). What it works out of the gifts (how each matches, what serves each
    interest) it works out the first time it is asked, for the gifts asked about: a
    description seen once at a small budget costs the affordable gifts only.
    """

    def __init__(self, catalog: Catalog, occasion: str, recipient: str, hints: Hints) -> None:
        self.catalog = catalog
        self.context = _context(recipient, hints)
        # An occasion the vocabulary does not know ("just because") gives way to the event the
        # description mentions ("moving house" -> housewarming); a known one stays.
        known = occasion in OCCASIONS and occasion != "any"
        self.occasion = occasion if known or self.context.event is None else self.context.event
        self.age = _age_of(recipient, hints, self.context, self.occasion)
        self.interests = given_interests(extract_interests(recipient), hints.interests, hints.avoid)
        self.pets = self.context.traits | {
            pet for pet, stemmed in _PET_STEMS.items() if (stemmed,) in self.interests.terms
        }
        self.pool = self._eligible()
        self._scored: dict[str, _Scored] = {}
        self._served: dict[int, _Served] = {}
        self._focused: bool | None = None

    def _eligible(self) -> tuple[Gift, ...]:
        """Gifts for their age (every gift when none suits it), diet, pets and the occasion, that
        the description does not rule out."""
        pool = _suitable(self.catalog, self.age, self.context.traits, self.pets, self.occasion)
        if not self.interests.disliked:
            return pool
        return tuple(gift for gift in pool if not excluded(self.interests, gift))

    def scored(self, gift: Gift) -> _Scored:
        """A gift of the pool with its match and its score but for the budget's part."""
        row = self._scored.get(gift.id)
        if row is None:
            match = match_gift(self.interests, gift)
            relation = None if match.hits else self._relation(gift)
            bonus = _RELATED_BONUS if relation is not None else 0.0
            row = self._scored[gift.id] = _Scored(
                partial=match.score + _occasion_score(gift, self.occasion) + bonus,
                age=_age_adjustment(gift, self.occasion, self.age.age),
                gift=gift,
                match=match,
                theme=_theme(gift, match),
                relation=relation,
            )
        return row

    def _relation(self, gift: Gift) -> str | None:
        """How a gift that matches no interest relates to the person, as a sentence, or None.

        In order: the occasion when it is an event (made for a baby shower) or the event the
        description mentions (and the gift suits the occasion too), the relationship, their kids,
        their pets, a trait (zero proof for someone sober), and their age when they are young.
        """
        context, occasion = self.context, self.occasion
        if occasion not in GENERAL_OCCASIONS and occasion in gift.occasions:
            return f"Made for {occasion_phrase(occasion)}."
        event = context.event
        if event is not None and event in gift.occasions and gift.suits_occasion(occasion):
            return f"Suits {occasion_phrase(event)}, which '{context.event_quote}' in your description tells."
        suits = _SUITS_RELATIONSHIP.get(context.kind or "")
        if suits is not None:
            tags, occasions, why = suits
            if tags.intersection(gift.tags) or occasions.intersection(gift.occasions):
                return f"For your {context.relationship}: {why}."
        if "kids" in context.traits and (gift.age_max < _ADULT or "family" in gift.tags):
            return f"For the family: they have kids, and it suits ages {gift.age_min}-{gift.age_max}."
        for tag in gift.tags:
            if tag in _NEEDS_PET and self.pets & _NEEDS_PET[tag]:
                return f"For their pet: {tag.removeprefix('needs ')} at home is what it is for."
        for trait in sorted(context.traits & _SUITS_TRAIT.keys()):
            tags, why = _SUITS_TRAIT[trait]
            if tags.intersection(gift.tags):
                return f"It is {why}."
        young = self.age.age is not None and self.age.age < _ADULT
        if young and gift.age_max < _YOUTH:
            return f"Made for their age: it suits ages {gift.age_min}-{gift.age_max}."
        return None

    @property
    def focused(self) -> bool:
        """True when some gift of the pool relates to what was said: then only related gifts are
        picked. When nothing does (no interest the catalog serves, nothing else to go on), the
        picks are general ones and the notice says so."""
        if self._focused is None:
            self._focused = any(self.scored(gift).related for gift in self.pool)
        return self._focused

    def related_rows(self) -> list[_Scored]:
        """Every gift of the pool that relates to what was said."""
        return [row for gift in self.pool if (row := self.scored(gift)).related]

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
    kept per description and hints, and only the pick is made per budget.
    """

    def __init__(self, catalog: Catalog, occasion: str) -> None:
        self._catalog = catalog
        self._occasion = occasion
        self._readings: dict[tuple[str, Hints], _Reading] = {}

    def _reading(self, recipient: str, hints: Hints) -> _Reading:
        reading = self._readings.get((recipient, hints))
        if reading is None:
            occasion = normalize_occasion(self._occasion)
            reading = self._readings[(recipient, hints)] = _Reading(self._catalog, occasion, recipient, hints)
        return reading

    def suggest(
        self, *, budget: float, recipient: str, count: int = 5, hints: Hints | None = None
    ) -> Suggestions | NoFit:
        """What :func:`suggest_gifts` answers for this catalog and occasion."""
        _validate(self._occasion, budget, recipient, count)
        given = hints if hints is not None else Hints()
        _validate_hints(given)
        return _pick(self._reading(recipient, given), float(budget), count)

    def ranking(
        self, *, budget: float, recipient: str, depth: int, hints: Hints
    ) -> tuple[Suggestions | NoFit, int]:
        """Up to ``depth`` gifts, best first, and how many gifts suitable for the person fit
        ``budget`` at all (related to what was said or not).

        For the bulk run, which hands each of the people sharing a description the best of these
        that are not yet given to too many others, and needs to know when a budget is too small
        to vary. Its inputs come from a parsed CSV, so only what parsing cannot rule out is checked.
        """
        _validate(self._occasion, budget, recipient, 1)
        reading = self._reading(recipient, hints)
        fitting = sum(1 for gift in reading.pool if gift.price <= budget)
        return _pick(reading, float(budget), depth, explain=False), fitting


def suggest_gifts(
    catalog: Catalog,
    *,
    occasion: str,
    budget: float,
    recipient: str,
    count: int = 5,
    interests: Sequence[str] | None = None,
    avoid: Sequence[str] | None = None,
    age: int | None = None,
    age_group: str | None = None,
    relationship: str | None = None,
) -> Suggestions | NoFit:
    """Up to ``count`` gifts for ``recipient`` at ``occasion`` costing at most ``budget`` US dollars.

    ``occasion`` is normalized ("Baby shower" -> "baby_shower", "xmas" -> "holiday"); an occasion
    outside the vocabulary is still served, favouring gifts that suit any occasion (or the event the
    description mentions, "moving house"). A stated or implied age in ``recipient`` ("8-year-old",
    "toddler", "teen") limits gifts to that age, and anything it rules out ("hates board games",
    "vegan", "no pets") is never suggested. Picks that relate to nothing said are left out, so the
    list may be shorter than ``count``; the notice then says so. The hints ``interests``, ``avoid``,
    ``age``, ``age_group`` and ``relationship`` take precedence over the description (see `Hints`).
    Returns :class:`NoFit` when no eligible gift is within budget or the budget is below
    :data:`MIN_BUDGET`; raises :class:`SuggestionInputError` (a ``ValueError``) for invalid input.
    """
    for name, items in (("interests", interests), ("avoid", avoid)):
        if items is not None and (isinstance(items, str) or not isinstance(items, Sequence)):
            raise SuggestionInputError(f"{name} must be a list of short texts, e.g. ['fishing', 'coffee']")
    hints = Hints(
        interests=tuple(interests or ()),
        avoid=tuple(avoid or ()),
        age=age,
        age_group=age_group,
        relationship=relationship,
    )
    return Suggester(catalog, occasion).suggest(budget=budget, recipient=recipient, count=count, hints=hints)


def _pick(reading: _Reading, budget: float, count: int, *, explain: bool = True) -> Suggestions | NoFit:
    """The suggestions of a reading at a budget: the affordable gifts, ranked and spread, and
    only those related to what was said when any gift is. Without ``explain`` the notice is
    worked out only for an empty list (the bulk run, which reads no other)."""
    interests, pool, occasion = reading.interests, reading.pool, reading.occasion
    if not pool:
        return _all_ruled_out(interests)
    if budget < MIN_BUDGET:
        return _below_a_cent(pool, budget)
    affordable = [reading.scored(gift) for gift in pool if gift.price <= budget]
    if not affordable:
        return _no_fit(pool, occasion, budget, reading.age)
    if reading.focused:
        affordable = [row for row in affordable if row.related]

    ranked = [
        (round(row.partial + _budget_score(row.gift.price, budget) + row.age, 6), row) for row in affordable
    ]
    picked = _pick_diverse(ranked, count, spread=len(interests.liked) != 1)
    return Suggestions(
        gifts=[
            Suggestion(
                id=row.gift.id,
                name=row.gift.name,
                price=row.gift.price,
                category=row.gift.category,
                reason=_reason(row, interests, occasion, budget),
            )
            for row in picked
        ],
        notice=_notice(reading, budget, picked, count) if explain or not picked else None,
    )


def _theme(gift: Gift, match: GiftMatch) -> str:
    return match.matched[0] if match.matched else gift.category


def _pick_diverse(ranked: list[tuple[float, _Scored]], count: int, *, spread: bool) -> list[_Scored]:
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
    picked: list[_Scored] = []
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
        picked.append(row)
    return picked
