"""The gift catalog: typed records, validation of the packaged data, and the occasion vocabulary.

The catalog ships as JSON inside the package so the app works offline and answers are reproducible.
Validation happens once at load time so every other module can trust the records it receives.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "GENERAL_OCCASIONS",
    "OCCASIONS",
    "Catalog",
    "CatalogError",
    "Gift",
    "load_catalog",
    "normalize_occasion",
    "occasion_phrase",
]

#: The occasions a gift can be tagged with. ``any`` marks gifts that suit every occasion.
OCCASIONS: tuple[str, ...] = (
    "birthday",
    "anniversary",
    "wedding",
    "graduation",
    "holiday",
    "retirement",
    "housewarming",
    "baby_shower",
    "thank_you",
    "promotion",
    "farewell",
    "valentines",
    "mothers_day",
    "fathers_day",
    "get_well",
    "any",
)

#: Occasions that say little about a gift: nearly every gift suits a birthday or the holidays, so
#: being listed for one does not tie a gift to anything. Every other occasion is a life event
#: (a retirement, a new baby) or a day with its own customs (Mother's Day, a thank-you).
GENERAL_OCCASIONS: frozenset[str] = frozenset({"birthday", "holiday", "any"})

# Everyday names people give occasions, keyed by their normalized form. Users type "Xmas" or
# "Valentine's Day"; the catalog only knows the fixed vocabulary above.
_OCCASION_ALIASES: Mapping[str, str] = {
    "christmas": "holiday",
    "xmas": "holiday",
    "x_mas": "holiday",
    "holidays": "holiday",
    "hanukkah": "holiday",
    "chanukah": "holiday",
    "kwanzaa": "holiday",
    "diwali": "holiday",
    "eid": "holiday",
    "new_year": "holiday",
    "new_years": "holiday",
    "secret_santa": "holiday",
    "bday": "birthday",
    "birthday_party": "birthday",
    "valentine": "valentines",
    "valentines_day": "valentines",
    "valentine_s_day": "valentines",
    "mother_s_day": "mothers_day",
    "mom_s_day": "mothers_day",
    "moms_day": "mothers_day",
    "father_s_day": "fathers_day",
    "dad_s_day": "fathers_day",
    "dads_day": "fathers_day",
    "babyshower": "baby_shower",
    "new_baby": "baby_shower",
    "thanks": "thank_you",
    "thankyou": "thank_you",
    "get_well_soon": "get_well",
    "getwell": "get_well",
    "recovery": "get_well",
    "house_warming": "housewarming",
    "new_home": "housewarming",
    "going_away": "farewell",
    "goodbye": "farewell",
    "leaving": "farewell",
    "new_job": "promotion",
    "engagement": "wedding",
    "grad": "graduation",
    "commencement": "graduation",
    "retiring": "retirement",
    "wedding_anniversary": "anniversary",
}

_OCCASION_PHRASES: Mapping[str, str] = {
    "birthday": "a birthday",
    "anniversary": "an anniversary",
    "wedding": "a wedding",
    "graduation": "a graduation",
    "holiday": "the holidays",
    "retirement": "a retirement",
    "housewarming": "a housewarming",
    "baby_shower": "a baby shower",
    "thank_you": "a thank-you",
    "promotion": "a promotion",
    "farewell": "a farewell",
    "valentines": "Valentine's Day",
    "mothers_day": "Mother's Day",
    "fathers_day": "Father's Day",
    "get_well": "a get-well wish",
    "any": "any occasion",
}


def normalize_occasion(text: str) -> str:
    """Map free-form occasion text onto the vocabulary when possible.

    Case, spaces, hyphens and apostrophes are folded so "Baby shower", "baby-shower" and
    "BABY_SHOWER" agree; common aliases ("xmas", "valentine's day") map to their vocabulary entry.
    Text outside the vocabulary is returned in normalized form rather than rejected, because an
    unusual occasion should still get suggestions (ranked by gifts that suit any occasion). Text with
    nothing to fold (only symbols, "🎉") is kept as typed, so prose can still name it.
    """
    slug = re.sub(r"[\W_]+", "_", text.strip().lower().replace("’", "'")).strip("_")
    if not slug:
        return text.strip()
    if slug in OCCASIONS:
        return slug
    return _OCCASION_ALIASES.get(slug, slug)


def occasion_phrase(occasion: str) -> str:
    """A readable noun phrase for an occasion ("a baby shower", "Mother's Day") used in prose."""
    normalized = normalize_occasion(occasion)
    known = _OCCASION_PHRASES.get(normalized)
    return known if known is not None else "the " + normalized.replace("_", " ")


class CatalogError(ValueError):
    """The catalog data is malformed; the message names the offending entry and field."""


@dataclass(frozen=True, slots=True)
class Gift:
    """One catalog item. Tags are lowercase interest phrases; ages are inclusive bounds in years."""

    id: str
    name: str
    category: str
    price: float
    tags: tuple[str, ...]
    occasions: tuple[str, ...]
    age_min: int
    age_max: int
    description: str

    def __hash__(self) -> int:
        # By id alone: equal gifts share it, and matching looks a gift up (its cached terms)
        # hundreds of thousands of times in a bulk run, where hashing every field adds up.
        return hash(self.id)

    def suits_occasion(self, occasion: str) -> bool:
        """True when the gift is tagged for ``occasion`` or for any occasion."""
        return occasion in self.occasions or "any" in self.occasions

    def suits_age(self, age: int) -> bool:
        """True when ``age`` lies within the gift's inclusive age range."""
        return self.age_min <= age <= self.age_max

    @property
    def made_for(self) -> str | None:
        """The one event this gift is made for, or None when it suits more than one occasion.

        A gift listed for a single occasion that is not a general one is about that event (a
        retirement plaque, a get-well care package): given for anything else it reads as a mistake,
        such as a retirement plaque for a retired father's birthday.
        """
        if len(self.occasions) == 1 and self.occasions[0] not in GENERAL_OCCASIONS:
            return self.occasions[0]
        return None

    def to_json_dict(self) -> dict[str, Any]:
        """The gift as plain JSON types, in the same shape as the packaged data."""
        return {
            "id": self.id,
            "name": self.name,
            "category": self.category,
            "price": self.price,
            "tags": list(self.tags),
            "occasions": list(self.occasions),
            "age_min": self.age_min,
            "age_max": self.age_max,
            "description": self.description,
        }


def _price_bounds(gifts: Iterable[Gift]) -> tuple[float, float]:
    prices = [gift.price for gift in gifts]
    return min(prices), max(prices)


@dataclass(frozen=True, slots=True)
class Catalog:
    """An immutable, validated collection of gifts with the queries the app needs."""

    gifts: tuple[Gift, ...]
    currency: str = "USD"

    @property
    def categories(self) -> list[str]:
        """Distinct category names, sorted for stable output."""
        return sorted({gift.category for gift in self.gifts})

    def in_category(self, name: str) -> tuple[Gift, ...]:
        """Gifts in the named category (case-insensitive); empty when the category is unknown."""
        wanted = name.strip().lower()
        return tuple(gift for gift in self.gifts if gift.category == wanted)

    def by_id(self, gift_id: str) -> Gift:
        """The gift with this id; raises ``KeyError`` naming the id when it is absent."""
        for gift in self.gifts:
            if gift.id == gift_id:
                return gift
        raise KeyError(f"no gift with id {gift_id!r} in the catalog")

    def cheapest(self, occasion: str | None = None) -> Gift:
        """The lowest-priced gift, optionally among those suited to ``occasion``.

        Ties go to the smaller id so the answer is deterministic. Raises ``LookupError`` when no gift
        suits the occasion (or the catalog is empty).
        """
        pool = self.gifts
        if occasion is not None:
            normalized = normalize_occasion(occasion)
            pool = tuple(gift for gift in pool if gift.suits_occasion(normalized))
        if not pool:
            raise LookupError(f"no gift in the catalog suits the occasion {occasion!r}")
        return min(pool, key=lambda gift: (gift.price, gift.id))

    def price_range(self, category: str | None = None) -> tuple[float, float]:
        """(lowest, highest) price overall or within a category; ``KeyError`` for an unknown category."""
        pool = self.gifts if category is None else self.in_category(category)
        if not pool:
            raise KeyError(f"unknown category {category!r}; known categories: {', '.join(self.categories)}")
        return _price_bounds(pool)

    def item_json(self, gift: Gift) -> dict[str, Any]:
        """One item as JSON types (same shape as the packaged data)."""
        return gift.to_json_dict()

    def summary(self) -> dict[str, Any]:
        """A compact JSON-ready overview: item count, overall price range and per-category stats."""
        low, high = self.price_range()
        categories = []
        for name in self.categories:
            members = self.in_category(name)
            cat_low, cat_high = _price_bounds(members)
            categories.append(
                {"name": name, "count": len(members), "min_price": cat_low, "max_price": cat_high}
            )
        return {
            "item_count": len(self.gifts),
            "currency": self.currency,
            "price_range": {"min": low, "max": high},
            "categories": categories,
        }

    def to_json_dict(self) -> dict[str, Any]:
        """The full catalog as JSON types: category names, price ranges and every item."""
        low, high = self.price_range()
        ranges: dict[str, dict[str, float]] = {}
        for name in self.categories:
            cat_low, cat_high = self.price_range(name)
            ranges[name] = {"min": cat_low, "max": cat_high}
        return {
            "currency": self.currency,
            "categories": self.categories,
            "price_range": {"min": low, "max": high},
            "price_ranges": ranges,
            "items": [self.item_json(gift) for gift in self.gifts],
        }


_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _require(entry: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in entry:
        raise CatalogError(f"{where}: missing field {key!r}")
    value = entry[key]
    # bool is an int subclass; a price or age of `true` is a data error, not a number.
    if isinstance(value, bool) or not isinstance(value, kind):
        raise CatalogError(f"{where}: field {key!r} has the wrong type ({type(value).__name__}): {value!r}")
    return value


def _string_tuple(entry: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    items = _require(entry, key, list, where)
    if not items or not all(isinstance(item, str) and item.strip() for item in items):
        raise CatalogError(f"{where}: field {key!r} must be a non-empty list of non-empty strings")
    return tuple(items)


def _parse_gift(entry: object, index: int) -> Gift:
    if not isinstance(entry, dict):
        raise CatalogError(f"gift #{index}: expected an object, got {type(entry).__name__}")
    where = f"gift #{index} ({entry.get('id', '<no id>')!r})"
    gift_id = _require(entry, "id", str, where)
    if not _SLUG.match(gift_id):
        raise CatalogError(f"{where}: id must be a lowercase slug like 'cast-iron-skillet'")
    name = _require(entry, "name", str, where).strip()
    category = _require(entry, "category", str, where).strip()
    description = _require(entry, "description", str, where).strip()
    if not name or not category or not description:
        raise CatalogError(f"{where}: name, category and description must not be blank")
    if category != category.lower():
        raise CatalogError(f"{where}: category {category!r} must be lowercase")
    price = float(_require(entry, "price", (int, float), where))
    if not math.isfinite(price) or price <= 0:
        raise CatalogError(f"{where}: price must be a positive number, got {price!r}")
    tags = _string_tuple(entry, "tags", where)
    if any(tag != tag.lower().strip() for tag in tags):
        raise CatalogError(f"{where}: tags must be lowercase and trimmed: {list(tags)!r}")
    occasions = _string_tuple(entry, "occasions", where)
    unknown = [occasion for occasion in occasions if occasion not in OCCASIONS]
    if unknown:
        raise CatalogError(f"{where}: unknown occasions {unknown!r}; allowed: {', '.join(OCCASIONS)}")
    age_min = _require(entry, "age_min", int, where)
    age_max = _require(entry, "age_max", int, where)
    if not 0 <= age_min <= age_max:
        raise CatalogError(f"{where}: ages must satisfy 0 <= age_min <= age_max, got {age_min}..{age_max}")
    return Gift(
        id=gift_id,
        name=name,
        category=category,
        price=price,
        tags=tags,
        occasions=occasions,
        age_min=age_min,
        age_max=age_max,
        description=description,
    )


def parse_catalog(data: object) -> Catalog:
    """Validate decoded catalog JSON and build a :class:`Catalog`; raises :class:`CatalogError`."""
    if not isinstance(data, dict):
        raise CatalogError("catalog root must be a JSON object with a 'gifts' list")
    entries = data.get("gifts")
    if not isinstance(entries, list) or not entries:
        raise CatalogError("catalog must have a non-empty 'gifts' list")
    currency = data.get("currency", "USD")
    if not isinstance(currency, str) or not currency:
        raise CatalogError("catalog 'currency' must be a non-empty string")
    gifts = tuple(_parse_gift(entry, index) for index, entry in enumerate(entries))
    seen: set[str] = set()
    for index, gift in enumerate(gifts):
        if gift.id in seen:
            raise CatalogError(f"gift #{index} ({gift.id!r}): duplicate id")
        seen.add(gift.id)
    return Catalog(gifts=gifts, currency=currency)


def _read_text(path: Path | None) -> str:
    if path is not None:
        return path.read_text(encoding="utf-8")
    return resources.files("giftgenius").joinpath("data", "catalog.json").read_text(encoding="utf-8")


@functools.cache
def _packaged_catalog() -> Catalog:
    return _parse_text(_read_text(None), "packaged catalog")


def _parse_text(text: str, source: str) -> Catalog:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{source} is not valid JSON: {exc}") from exc
    return parse_catalog(data)


def load_catalog(path: Path | None = None) -> Catalog:
    """Load and validate a catalog; the packaged one by default (parsed once, then cached).

    A ``path`` is read fresh every call so tests and tools can point at alternative data.
    """
    if path is None:
        return _packaged_catalog()
    return _parse_text(_read_text(path), str(path))
