"""Turn free text about a person into interest terms and score gifts against them.

A recipient description such as "my brother, a sci-fi bookworm who loves board games" is reduced to
*terms*: stemmed single words plus stemmed multi-word phrases. Synonyms are applied first so that
everyday words ("bookworm", "sci-fi", "coder") land on the phrases the catalog uses ("reading",
"science fiction", "programming"). Gift text goes through the same pipeline, so matching is a plain
set intersection and a phrase match ("board games") naturally outranks a loose single-word match
("games").
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

import snowballstemmer  # type: ignore[import-untyped]

from giftgenius.catalog import Gift

__all__ = [
    "STOP_WORDS",
    "GiftMatch",
    "Interests",
    "age_hint",
    "extract_interests",
    "match_gift",
    "stem",
    "text_terms",
    "tokenize",
]

Term = tuple[str, ...]
"""A stemmed word sequence; one element for a single word, more for a phrase."""

# Longest phrase we look for; catalog tags are at most three words long.
_MAX_PHRASE = 3

# Field weights: a tag is an explicit statement of what a gift is about, the name is a strong
# signal, and the description often mentions things in passing.
TAG_WEIGHT = 6.0
NAME_WEIGHT = 4.0
DESCRIPTION_WEIGHT = 2.0
# Extra credit when a term is a whole tag ("gaming" == tag "gaming"), not just part of one
# ("game" inside "board games").
WHOLE_TAG_BONUS = 4.0
# Each extra word in a matched phrase adds half again: "board games" beats "games" alone.
PHRASE_BONUS = 0.5
# Share of an interest group's non-best matches that still counts, as a tie-breaker.
SECONDARY_SHARE = 0.1

# Function words, plus words that describe the person rather than what they like ("my sister",
# "a big fan of", "8-year-old"); age words are handled by `age_hint` instead.
_STOP_WORDS_TEXT = """
    a about above after again against all also always am an and any are as at be because been before
    being below between both but by can could did do does doing down during each etc ever every few for
    from further get gets got had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most much my myself no nor not now of off on once only or other
    our ours ourselves out over own really same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves
    love loves loved loving lover lovers like likes liked enjoy enjoys enjoyed enjoying adore adores
    big huge fan fans obsessed passionate crazy totally kind sort lot lots thing things stuff
    someone somebody person people guy gal friend friends buddy pal bestie best good great new
    gift gifts present presents recipient idea ideas something anything special nice
    mom mum mother dad father parent parents wife husband partner spouse boyfriend girlfriend fiance
    fiancee sister brother sibling son daughter aunt uncle niece nephew cousin grandma grandpa
    grandmother grandfather grandparent grandparents grandson granddaughter boss coworker colleague
    manager team teammate neighbor neighbour roommate mentor teacher client
    year years yr yrs old aged age turning turns month months
    kid kids child children teen teens teenager teenagers toddler toddlers baby babies infant newborn
    boy boys girl girls man men woman women lady ladies couple couples
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

_stemmer = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """The Snowball English stem of a lowercase word ("games" -> "game", "hiking" -> "hike")."""
    result: str = _stemmer.stemWord(word)
    return result


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[str]:
    """Lowercase words; hyphens and punctuation separate words, possessive "'s" is dropped."""
    words = _WORD.findall(text.lower().replace("’", "'"))
    return [word.removesuffix("'s").replace("'", "") for word in words]


def _load_synonyms() -> dict[str, tuple[str, ...]]:
    raw = resources.files("giftgenius").joinpath("data", "synonyms.json").read_text(encoding="utf-8")
    table = json.loads(raw)["synonyms"]
    return {" ".join(tokenize(key)): tuple(values) for key, values in table.items()}


@functools.cache
def _synonym_pattern() -> tuple[re.Pattern[str], dict[str, tuple[str, ...]]]:
    """One regex over every synonym key; longest keys first so "space opera" beats "space".

    Words inside a key may be joined by spaces, hyphens or nothing, so "sci-fi", "sci fi" and "scifi"
    (or "board games" and "boardgames") all hit the same entry.
    """
    table = _load_synonyms()
    keys = sorted(table, key=lambda key: (-len(key), key))
    alternatives = [r"[\s\-]*".join(re.escape(word) for word in key.split()) for key in keys]
    pattern = re.compile(r"(?<![a-z0-9])(?:" + "|".join(alternatives) + r")(?![a-z0-9])")
    compact = {key.replace(" ", ""): values for key, values in table.items()}
    return pattern, compact


_CLAUSE_BREAK = re.compile(r"[,;:.!?/()&+|\n]+")


def _segments(text: str) -> list[tuple[list[str], str | None, int]]:
    """Split text into word runs, replacing synonym hits with their canonical phrases.

    Each segment is (words, label, source). Punctuation ends a segment ("hiking, coffee" is two
    interests), and synonym expansions become their own segments so their words are never glued into
    phrases with neighbouring words. The label is the canonical phrase, or None for ordinary text;
    segments expanded from the same synonym hit share a source number.
    """
    pattern, compact = _synonym_pattern()
    lowered = text.lower().replace("’", "'")
    segments: list[tuple[list[str], str | None, int]] = []

    def plain(piece: str) -> None:
        for clause in _CLAUSE_BREAK.split(piece):
            segments.append((tokenize(clause), None, len(segments)))

    cursor = 0
    for hit in pattern.finditer(lowered):
        plain(lowered[cursor : hit.start()])
        key = re.sub(r"[\s\-]+", "", hit.group(0))
        source = len(segments)
        segments.extend((tokenize(phrase), phrase, source) for phrase in compact[key])
        cursor = hit.end()
    plain(lowered[cursor:])
    return [segment for segment in segments if segment[0]]


def _content_runs(words: Sequence[str]) -> list[list[str]]:
    """Maximal runs of non-stop-words; stop words and bare numbers break phrases."""
    runs: list[list[str]] = [[]]
    for word in words:
        if word in STOP_WORDS or word.isdigit() or len(word) < 2:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(word)
    return [run for run in runs if run]


def _ngrams(run: Sequence[str]) -> Iterable[tuple[Term, str]]:
    """Stemmed n-grams of a word run, each with the surface words it came from."""
    stems = [stem(word) for word in run]
    for size in range(1, min(_MAX_PHRASE, len(run)) + 1):
        for start in range(len(run) - size + 1):
            yield tuple(stems[start : start + size]), " ".join(run[start : start + size])


def text_terms(text: str) -> frozenset[Term]:
    """Every stemmed word and phrase (up to three words) in ``text``, after synonym expansion."""
    terms: set[Term] = set()
    for words, _label, _source in _segments(text):
        for run in _content_runs(words):
            terms.update(term for term, _surface in _ngrams(run))
    return frozenset(terms)


@dataclass(frozen=True, slots=True)
class Interests:
    """What a recipient description says they like.

    ``groups`` holds one set of terms per stated interest (a phrase like "vintage vinyl records" or
    one synonym hit like "foodie"). A gift earns credit once per group, for its best-matching term,
    so one long phrase cannot outweigh several separate interests. ``labels`` gives readable text.
    """

    groups: tuple[frozenset[Term], ...]
    labels: Mapping[Term, str]

    @property
    def terms(self) -> frozenset[Term]:
        """All terms across every interest group."""
        return frozenset().union(*self.groups)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def label(self, term: Term) -> str:
        """Readable text for a term, e.g. ("board", "game") -> "board games"."""
        return self.labels.get(term, " ".join(term))


def extract_interests(text: str) -> Interests:
    """Interest groups from a recipient description ("friend who loves board games, hiking").

    Every run of content words is one interest; all phrases expanded from one synonym hit ("foodie"
    -> cooking, food) together form one interest. Labels keep the words the user (or the synonym
    table) used, so explanations read naturally.
    """
    groups: dict[tuple[int, int], set[Term]] = {}
    labels: dict[Term, str] = {}
    for words, label, source in _segments(text):
        for index, run in enumerate(_content_runs(words)):
            key = (source, 0 if label is not None else index)
            group = groups.setdefault(key, set())
            for term, surface in _ngrams(run):
                group.add(term)
                labels.setdefault(term, label if label is not None and len(term) == len(run) else surface)
    unique: list[frozenset[Term]] = []
    for candidate in map(frozenset, groups.values()):
        if candidate not in unique:
            unique.append(candidate)
    return Interests(groups=tuple(unique), labels=labels)


@dataclass(frozen=True, slots=True)
class _GiftProfile:
    tag_terms: frozenset[Term]
    whole_tags: Mapping[Term, str]
    name_terms: frozenset[Term]
    description_terms: frozenset[Term]


@functools.lru_cache(maxsize=4096)
def _profile(gift: Gift) -> _GiftProfile:
    """Pre-computed terms for a gift; cached because every suggestion scores the whole catalog."""
    tag_terms: set[Term] = set()
    whole: dict[Term, str] = {}
    # A tag's own words claim it first; synonym expansions ("tabletop" -> board games) come second,
    # so a gift tagged both "board games" and "tabletop roleplaying" reports "board games".
    for tag in gift.tags:
        tag_terms.update(text_terms(tag))
        whole.setdefault(tuple(stem(word) for word in tokenize(tag)), tag)
    for tag in gift.tags:
        for words, label, _source in _segments(tag):
            if label is not None:
                whole.setdefault(tuple(stem(word) for word in words), tag)
    return _GiftProfile(
        tag_terms=frozenset(tag_terms),
        whole_tags=whole,
        name_terms=text_terms(gift.name),
        description_terms=text_terms(gift.description),
    )


@dataclass(frozen=True, slots=True)
class GiftMatch:
    """How well a gift matches someone's interests, and which interests it matched."""

    score: float
    matched: tuple[str, ...]


def _term_score(term: Term, profile: _GiftProfile) -> float:
    score = 0.0
    if term in profile.tag_terms:
        score += TAG_WEIGHT
        if term in profile.whole_tags:
            score += WHOLE_TAG_BONUS
    if term in profile.name_terms:
        score += NAME_WEIGHT
    if term in profile.description_terms:
        score += DESCRIPTION_WEIGHT
    return score * (1.0 + PHRASE_BONUS * (len(term) - 1))


def match_gift(interests: Interests, gift: Gift) -> GiftMatch:
    """Score ``gift`` against ``interests``: tags > name > description, whole phrases > single words.

    Each interest group contributes its best-matching term in full plus a small share of its other
    matches (so "board games" on a gift named "... Board Game" edges out one that only has the tag).
    ``matched`` lists the readable labels of each group's best term, strongest first.
    """
    profile = _profile(gift)
    total = 0.0
    found: list[tuple[float, str]] = []
    for group in interests.groups:
        scored = sorted(((_term_score(term, profile), term) for term in group), reverse=True)
        best_score, best_term = scored[0]
        if best_score <= 0:
            continue
        total += best_score + SECONDARY_SHARE * sum(score for score, _term in scored[1:])
        label = profile.whole_tags.get(best_term) or interests.label(best_term)
        found.append((best_score, label))
    found.sort(key=lambda item: (-item[0], item[1]))
    matched: list[str] = []
    for _score, label in found:
        if label not in matched:
            matched.append(label)
    return GiftMatch(score=total, matched=tuple(matched))


_AGE_PATTERNS = (
    re.compile(r"\b(\d{1,3})\s*-?\s*(?:years?|yrs?|yo)\b(?:\s*-?\s*old)?"),
    re.compile(r"\b(?:aged?|turning|turns)\s+(\d{1,3})\b"),
    re.compile(r"\b(\d{1,3})(?:st|nd|rd|th)\s+birthday\b"),
)

# Representative ages for life-stage words; the age filter keeps gifts whose range covers them.
_AGE_WORDS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"\b(?:newborn|infant|baby|babies)\b"), 0),
    (re.compile(r"\b(?:toddlers?)\b"), 2),
    (re.compile(r"\b(?:preschool(?:er)?s?)\b"), 4),
    (re.compile(r"\b(?:kids?|child|children|little (?:one|boy|girl))\b"), 8),
    (re.compile(r"\b(?:tweens?)\b"), 11),
    (re.compile(r"\b(?:teens?|teenagers?|teenaged?)\b"), 15),
)

_MAX_AGE = 99


def age_hint(text: str) -> int | None:
    """The recipient's age if the text states it ("8-year-old", "turning 40") or implies a life stage.

    Returns None when nothing suggests an age, so no age filter is applied. Stated ages are clamped to
    the catalog's 0-99 range.
    """
    lowered = text.lower()
    for pattern in _AGE_PATTERNS:
        found = pattern.search(lowered)
        if found:
            return min(int(found.group(1)), _MAX_AGE)
    for pattern, age in _AGE_WORDS:
        if pattern.search(lowered):
            return age
    return None
