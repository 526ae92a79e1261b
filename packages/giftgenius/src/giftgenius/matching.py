"""Turn free text about a person into interest terms and score gifts against them.

A recipient description such as "my brother, a sci-fi bookworm who loves board games" is reduced to
*terms*: stemmed single words plus stemmed multi-word phrases. Synonyms are applied first so that
everyday words ("bookworm", "sci-fi", "coder") land on the phrases the catalog uses ("reading",
"science fiction", "programming"). Gift text goes through the same pipeline, so matching is a plain
set intersection and a phrase match ("board games") naturally outranks a loose single-word match
("games").

Descriptions also say what someone does *not* want ("hates board games", "no candles") and name
hobbies the catalog cannot serve ("likes fishing"). So every interest records how it was said: liked
after a cue such as "loves", disliked after one such as "hates" (a gift matching it is excluded, not
merely ranked lower), or just mentioned; and whether the catalog has nothing for it, in which case the
closest catalog tags stand in and callers can say so plainly instead of pretending to a match.

A description also says things about the person that are not hobbies: a life event ("just retired",
"moving house"), who they are to the giver ("my boss"), a diet or habit ("vegan", "sober"), kids or
pets ("has two kids", "has a dog", "no pets"). `read_context` reads those into a `Context`, and
`extract_interests` leaves the event and sobriety phrases out, so "retired" never matches a
retirement plaque as if it were a hobby, and "doesn't drink" never rules out food & drink.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Literal

import snowballstemmer  # type: ignore[import-untyped]

from giftgenius.catalog import Gift

__all__ = [
    "STOP_WORDS",
    "Context",
    "GiftMatch",
    "Hit",
    "Interest",
    "Interests",
    "age_hint",
    "closest_table",
    "excluded",
    "extract_interests",
    "given_interests",
    "match_gift",
    "read_context",
    "relationship_kind",
    "serves",
    "stem",
    "text_terms",
    "tokenize",
]

Term = tuple[str, ...]
"""A stemmed word sequence; one element for a single word, more for a phrase."""

Polarity = Literal["liked", "disliked", "mentioned"]
"""How a description speaks of something: after "loves", after "hates", or neither."""

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
# Share of the score a stand-in earns (the closest tags for a hobby the catalog lacks): a gift for
# something they said they like beats one that is only near it.
CLOSEST_SHARE = 0.5

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
    recently newly soon finally currently
    one two three four five six seven eight nine ten
    teenage teenaged tween tweens preteen preteens
    mom mum mother dad father parent parents wife husband partner spouse boyfriend girlfriend fiance
    fiancee sister brother sibling son daughter aunt uncle niece nephew cousin grandma grandpa
    grandmother grandfather grandparent grandparents grandson granddaughter boss coworker colleague
    manager team teammate neighbor neighbour roommate mentor teacher client
    year years yr yrs old aged age turning turns month months
    kid kids child children teen teens teenager teenagers toddler toddlers baby babies infant newborn
    boy boys girl girls man men woman women lady ladies couple couples
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

#: One stemmer per thread: a stemmer keeps the word it works on in itself, so two bulk
#: analyses stemming at once on two threads would read each other's words.
_stemmers = threading.local()


#: Words whose Snowball stem would merge a hobby with something else: "fishing" is not "fish" (an
#: angler wants tackle, not an aquarium), "boxing" is not "box" (every gift box).
_OWN_STEMS: Mapping[str, str] = {"fishing": "fishing", "boxing": "boxing"}


@functools.lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """The Snowball English stem of a lowercase word ("games" -> "game", "hiking" -> "hike")."""
    if word in _OWN_STEMS:
        return _OWN_STEMS[word]
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    result: str = stemmer.stemWord(word)
    return result


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[str]:
    """Lowercase words; hyphens and punctuation separate words, possessive "'s" is dropped."""
    words = _WORD.findall(text.lower().replace("’", "'"))
    return [word.removesuffix("'s").replace("'", "") for word in words]


def _load_table(name: str) -> dict[str, tuple[str, ...]]:
    """The packaged phrase table ``data/<name>.json`` (entries under the key ``name``), keys tokenized."""
    raw = resources.files("giftgenius").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    table = json.loads(raw)[name]
    return {" ".join(tokenize(key)): tuple(values) for key, values in table.items()}


def closest_table() -> dict[str, tuple[str, ...]]:
    """Hobbies the catalog has no gifts for, each with the catalog tags that come closest."""
    return _load_table("closest")


@dataclass(frozen=True, slots=True)
class _Expansion:
    """What a table key becomes: catalog phrases, and whether they only stand in for it."""

    phrases: tuple[str, ...]
    closest: bool


@functools.cache
def _hit_pattern(describing_people: bool) -> tuple[re.Pattern[str], dict[str, _Expansion]]:
    """One regex over every table key; longest keys first so "space opera" beats "space".

    Words inside a key may be joined by spaces, hyphens or nothing, so "sci-fi", "sci fi" and "scifi"
    (or "board games" and "boardgames") all hit the same entry. The closest table applies only when
    describing people: gift text that says "fishing" would be a fishing gift, not a stand-in for one.
    It is read before stemming, which would otherwise turn "fishing" into "fish" and match aquariums.
    """
    table = {key: _Expansion(values, closest=False) for key, values in _load_table("synonyms").items()}
    if describing_people:
        table.update({key: _Expansion(values, closest=True) for key, values in closest_table().items()})
    keys = sorted(table, key=lambda key: (-len(key), key))
    alternatives = [r"[\s\-]*".join(re.escape(word) for word in key.split()) for key in keys]
    pattern = re.compile(r"(?<![a-z0-9])(?:" + "|".join(alternatives) + r")(?![a-z0-9])")
    compact = {key.replace(" ", ""): expansion for key, expansion in table.items()}
    return pattern, compact


_CLAUSE_BREAK = re.compile(r"[,;:.!?/()&+|\n]+")

# Cue words are matched on lowercased text with straight apostrophes. A cue must be a whole word, and
# one followed by a hyphen is not a cue: "no-nonsense cook" still likes cooking.
_WORD_START = r"(?<![a-z0-9'])"
_WORD_END = r"(?![a-z0-9'\-])"
_NEGATION = (
    r"hate[sd]?|hating|dislike[sd]?|disliking|detests?|loathes?|can'?t\s+stand|cannot\s+stand"
    r"|allergic\s+to|except(?:\s+for)?|(?:does|do|did|is|are|was|were)n'?t|not(?!\s+(?:only|just)\b)|no"
)
# Words after a negation that only say how strongly it is meant ("isn't really a big fan of"); they
# belong to the cue, so "like" in "doesn't like" is not read as a liking cue.
_NEGATION_FILLER = (
    r"(?:\s+(?:really|much|particularly|very|that|too|so|at|all|a|an|the|any|more|longer|big|huge|fan"
    r"|fans|of|into|like|likes|love|loves|enjoy|enjoys|want|wants|care|for|keen|on|fond|interested|in"
    rf"|with){_WORD_END})*"
)
_LIKING = (
    r"loves?|loved|loving|likes?|liked|enjoys?|enjoyed|enjoying|adores?|adored|prefers?|into|fans?\s+of"
    r"|obsessed\s+with|passionate\s+about|crazy\s+about|mad\s+about|keen\s+on|big\s+on|interested\s+in"
    r"|collects|plays|hobby|hobbies"
)
_CONTRAST = r"but|though|although|however|yet|whereas|instead"
_CUES = re.compile(
    rf"{_WORD_START}(?:(?P<negation>(?:{_NEGATION}){_NEGATION_FILLER})"
    rf"|(?P<liking>(?:(?P<joined>and|or|plus)\s+(?:also\s+)?)?(?:{_LIKING}))"
    rf"|(?P<contrast>{_CONTRAST})){_WORD_END}(?:\s*:)?"
    r"|(?P<sentence>[.!?;\n]+)|(?P<pause>[,:()|]+)"
)


def _next_polarity(current: Polarity, cue: re.Match[str]) -> Polarity:
    """The polarity after a cue; see `_polarity_spans` for the rules."""
    if cue["negation"] is not None:
        return "disliked"
    if cue["liking"] is not None:
        # Inside a dislike, a bare "like" compares ("hates things like golf"); "and loves" changes mind.
        return "disliked" if current == "disliked" and cue["joined"] is None else "liked"
    if cue["pause"] is not None:
        return "mentioned" if current == "disliked" else current
    return "mentioned"  # a contrast or the end of a sentence


def _polarity_spans(lowered: str) -> list[tuple[str, Polarity]]:
    """Cut a description into stretches, each with how it is meant; the cues themselves are dropped.

    A liking cue ("loves", "into", "a fan of") holds to the end of the sentence, so a list after it is
    all stated interests. A negation ("hates", "doesn't like", "no") holds only to the next comma, a
    contrast ("but", "though") or "and" plus a liking cue, so "hates board games but loves puzzles" and
    "hates crowds, loves hiking" keep their second half, while "no board games or puzzles" rules out
    both.
    """
    spans: list[tuple[str, Polarity]] = []
    polarity: Polarity = "mentioned"
    cursor = 0
    for cue in _CUES.finditer(lowered):
        spans.append((lowered[cursor : cue.start()], polarity))
        polarity = _next_polarity(polarity, cue)
        cursor = cue.end()
    spans.append((lowered[cursor:], polarity))
    return spans


@dataclass(frozen=True, slots=True)
class _Segment:
    """A run of words from one clause.

    ``label`` is the catalog phrase when the words came from a table hit (None for ordinary text);
    segments expanded from one hit share ``source`` and ``quote``, the words the text used ("sci-fi").
    ``closest`` marks phrases standing in for a hobby the catalog lacks.
    """

    words: list[str]
    label: str | None
    source: int
    quote: str | None
    polarity: Polarity
    closest: bool


def _expand(piece: str, polarity: Polarity, describing_people: bool, segments: list[_Segment]) -> None:
    """Append the segments of ``piece``: clauses of plain words, and one segment per table phrase.

    Punctuation ends a segment ("hiking, coffee" is two interests), and table expansions become their
    own segments so their words are never glued into phrases with neighbouring words.
    """
    pattern, table = _hit_pattern(describing_people)

    def plain(part: str) -> None:
        for clause in _CLAUSE_BREAK.split(part):
            segments.append(_Segment(tokenize(clause), None, len(segments), None, polarity, False))

    cursor = 0
    for hit in pattern.finditer(piece):
        plain(piece[cursor : hit.start()])
        expansion = table[re.sub(r"[\s\-]+", "", hit.group(0))]
        source, quote = len(segments), " ".join(hit.group(0).split())
        segments.extend(
            _Segment(tokenize(phrase), phrase, source, quote, polarity, expansion.closest)
            for phrase in expansion.phrases
        )
        cursor = hit.end()
    plain(piece[cursor:])


def _segments(text: str, *, describing_people: bool = False) -> list[_Segment]:
    """Split text into word runs, replacing table hits with their catalog phrases.

    Only a description of a person is read for cues ("hates", "loves"); gift text is all "mentioned",
    so "No batteries needed" on a gift still describes the gift.
    """
    lowered = text.lower().replace("’", "'")
    spans: list[tuple[str, Polarity]] = (
        _polarity_spans(lowered) if describing_people else [(lowered, "mentioned")]
    )
    segments: list[_Segment] = []
    for piece, polarity in spans:
        _expand(piece, polarity, describing_people, segments)
    return [segment for segment in segments if segment.words]


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
    for segment in _segments(text):
        for run in _content_runs(segment.words):
            terms.update(term for term, _surface in _ngrams(run))
    return frozenset(terms)


@dataclass(frozen=True, slots=True)
class Interest:
    """One thing a description mentions: a run of words ("vintage vinyl records") or one table hit.

    ``terms`` are what gifts are scored on. ``whole`` holds the complete phrases ("board games", not
    "games"): a dislike excludes only gifts matching one of those, so disliking board games does not
    rule out video games. ``text`` is the description's own words, ``quotes`` the words behind each
    term, for explanations that quote rather than show stems. ``phrases`` are the catalog phrases of a
    table hit. ``closest`` means the catalog has nothing for ``text`` and ``phrases`` stand in for it.
    ``given`` marks an interest passed as a structured hint rather than read from the description, so
    an explanation can say it matches "the interest you gave".
    """

    terms: frozenset[Term]
    whole: frozenset[Term]
    text: str
    polarity: Polarity
    closest: bool
    phrases: tuple[str, ...]
    quotes: Mapping[Term, str]
    given: bool = False

    @property
    def stated(self) -> bool:
        """Said with a liking cue ("likes fishing") or given as a hint, so worth telling the user
        when nothing matches."""
        return self.polarity == "liked"

    def quote(self, term: Term) -> str:
        """The description's words behind ``term`` ("hiking" for ("hike",), "sci-fi" for a hit)."""
        return self.quotes.get(term, self.text)


def _interest(segment: _Segment, run: list[str], grams: list[tuple[Term, str]]) -> Interest:
    """One run of a segment as an interest; a table hit is quoted as a whole, plain words term by term."""
    return Interest(
        terms=frozenset(term for term, _surface in grams),
        # A stand-in cannot rule anything out: disliking fishing says nothing about camping gifts.
        whole=frozenset() if segment.closest else frozenset({tuple(stem(word) for word in run)}),
        text=segment.quote if segment.quote is not None else " ".join(run),
        polarity=segment.polarity,
        closest=segment.closest,
        phrases=() if segment.label is None else (segment.label,),
        quotes=dict(grams) if segment.quote is None else {},
    )


def _joined(first: Interest | None, second: Interest) -> Interest:
    """Both phrases of one table hit ("foodie" -> cooking, food) as one interest."""
    if first is None:
        return second
    return Interest(
        terms=first.terms | second.terms,
        whole=first.whole | second.whole,
        text=first.text,
        polarity=first.polarity,
        closest=first.closest,
        phrases=first.phrases + second.phrases,
        quotes={**second.quotes, **first.quotes},
        given=first.given,
    )


def _unique(interests: Iterable[Interest]) -> tuple[Interest, ...]:
    """One interest per set of terms ("board games, boardgames" is one), first mention first."""
    seen: dict[frozenset[Term], Interest] = {}
    for interest in interests:
        seen.setdefault(interest.terms, interest)
    return tuple(seen.values())


@dataclass(frozen=True, slots=True)
class Interests:
    """What a recipient description says they like, and what it rules out.

    ``liked`` holds every interest not spoken of negatively, one per mention (a phrase like "vintage
    vinyl records" or one synonym hit like "foodie"). A gift earns credit once per interest,
    for its best-matching term, so one long phrase cannot outweigh several separate interests.
    ``disliked`` holds what the description rules out. ``labels`` gives readable text for terms.
    """

    liked: tuple[Interest, ...]
    disliked: tuple[Interest, ...]
    labels: Mapping[Term, str]

    @property
    def groups(self) -> tuple[frozenset[Term], ...]:
        """The terms of each liked interest."""
        return tuple(interest.terms for interest in self.liked)

    @property
    def terms(self) -> frozenset[Term]:
        """All terms across every liked interest."""
        return frozenset().union(*self.groups)

    def __bool__(self) -> bool:
        return bool(self.liked)

    def label(self, term: Term) -> str:
        """Readable text for a term, e.g. ("board", "game") -> "board games"."""
        return self.labels.get(term, " ".join(term))


def extract_interests(text: str) -> Interests:
    """Interests from a recipient description ("friend who loves board games, hates golf").

    Every run of content words is one interest; all phrases expanded from one table hit ("foodie" ->
    cooking, food) together form one. Something both liked and disliked counts as disliked, so a
    gift for it is never suggested. Labels keep the words the user (or the table) used. Life events
    and sobriety ("retired", "new job", "doesn't drink") are context, not interests: they are cut out
    first and read by `read_context` instead.
    """
    found: dict[tuple[int, int], Interest] = {}
    labels: dict[Term, str] = {}
    for segment in _segments(
        _CONTEXT_PHRASES.sub(",", text.lower().replace("’", "'")), describing_people=True
    ):
        for index, run in enumerate(_content_runs(segment.words)):
            grams = list(_ngrams(run))
            label = segment.label
            for term, surface in grams:
                labels.setdefault(term, label if label is not None and len(term) == len(run) else surface)
            key = (segment.source, 0 if label is not None else index)
            found[key] = _joined(found.get(key), _interest(segment, run, grams))
    disliked = _unique(interest for interest in found.values() if interest.polarity == "disliked")
    ruled_out = {interest.terms for interest in disliked}
    liked = _unique(
        interest
        for interest in found.values()
        if interest.polarity != "disliked" and interest.terms not in ruled_out
    )
    return Interests(liked=liked, disliked=disliked, labels=labels)


def given_interests(parsed: Interests, interests: Sequence[str], avoid: Sequence[str]) -> Interests:
    """``parsed`` with structured hints applied: given ``interests`` replace the liked ones read from
    the description (when there are any), and ``avoid`` adds to what it rules out.

    Hints come from the model, which has the whole conversation: when it names the interests, they
    are a better account than the words of one description. Each hint is read like a description of
    its own (so "sci-fi" still reaches science fiction and "fishing" its stand-ins) and marked
    ``given`` so explanations can say where it came from.
    """
    liked = parsed.liked
    labels = dict(parsed.labels)
    if any(item.strip() for item in interests):
        liked = ()
        for item in interests:
            read = extract_interests(item)
            liked += tuple(replace(interest, polarity="liked", given=True) for interest in read.liked)
            labels.update(read.labels)
    avoided: tuple[Interest, ...] = ()
    for item in avoid:
        read = extract_interests(item)
        avoided += tuple(replace(interest, polarity="disliked") for interest in (*read.liked, *read.disliked))
    disliked = _unique((*parsed.disliked, *avoided))
    ruled_out = {interest.terms for interest in disliked}
    kept = _unique(interest for interest in liked if interest.terms not in ruled_out)
    return Interests(liked=kept, disliked=disliked, labels=labels)


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
        for segment in _segments(tag):
            if segment.label is not None:
                whole.setdefault(tuple(stem(word) for word in segment.words), tag)
    return _GiftProfile(
        tag_terms=frozenset(tag_terms),
        whole_tags=whole,
        name_terms=text_terms(gift.name),
        description_terms=text_terms(gift.description),
    )


@dataclass(frozen=True, slots=True)
class Hit:
    """One interest a gift meets: the description's words, and the catalog phrase they met.

    ``closest`` marks a stand-in: the catalog has nothing for ``quote`` and ``label`` is the nearest
    thing it has, so an explanation must not claim the gift matches ``quote``. ``given`` marks an
    interest passed as a hint rather than read from the description.
    """

    quote: str
    label: str
    closest: bool
    given: bool = False


@dataclass(frozen=True, slots=True)
class GiftMatch:
    """How well a gift matches someone's interests, and which interests it matched."""

    score: float
    hits: tuple[Hit, ...]

    @property
    def matched(self) -> tuple[str, ...]:
        """The catalog phrases matched, strongest first ("board games", "science fiction")."""
        return tuple(hit.label for hit in self.hits)


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


@functools.lru_cache(maxsize=65536)
def _fit(terms: frozenset[Term], gift: Gift) -> tuple[float, Term, float]:
    """How one interest's terms meet a gift: the best term's score, that term, and the sum of
    the others' scores (strongest first). Cached: a bulk run meets the same few interests
    in thousands of descriptions, and each against the whole catalog."""
    profile = _profile(gift)
    scored = sorted(((_term_score(term, profile), term) for term in terms), reverse=True)
    best_score, best_term = scored[0]
    return best_score, best_term, sum(score for score, _term in scored[1:])


def match_gift(interests: Interests, gift: Gift) -> GiftMatch:
    """Score ``gift`` against the liked interests: tags > name > description, phrases > single words.

    Each interest contributes its best-matching term in full plus a small share of its other matches
    (so "board games" on a gift named "... Board Game" edges out one that only has the tag); a
    stand-in contributes ``CLOSEST_SHARE`` of that. ``hits`` holds one entry per catalog phrase
    matched, strongest first, quoting the description's words behind it.
    """
    profile = _profile(gift)
    total = 0.0
    found: list[tuple[float, Hit]] = []
    for interest in interests.liked:
        best_score, best_term, others = _fit(interest.terms, gift)
        if best_score <= 0:
            continue
        share = CLOSEST_SHARE if interest.closest else 1.0
        total += share * (best_score + SECONDARY_SHARE * others)
        label = profile.whole_tags.get(best_term) or interests.label(best_term)
        hit = Hit(interest.quote(best_term), label, interest.closest, interest.given)
        found.append((share * best_score, hit))
    found.sort(key=lambda item: (-item[0], item[1].label))
    hits: list[Hit] = []
    for _score, hit in found:
        if all(hit.label != kept.label for kept in hits):
            hits.append(hit)
    return GiftMatch(score=total, hits=tuple(hits))


def serves(interest: Interest, gift: Gift) -> bool:
    """True when ``gift`` matches ``interest`` at all: any of its terms in the tags, name or description."""
    return _fit(interest.terms, gift)[0] > 0


def excluded(interests: Interests, gift: Gift) -> bool:
    """True when ``gift`` is about something the description rules out ("hates board games").

    A disliked interest's whole phrase must match, anywhere in the gift's tags, name or description:
    someone who hates board games still gets video games, but no gift that is a board game.
    """
    profile = _profile(gift)
    return any(_term_score(term, profile) > 0 for interest in interests.disliked for term in interest.whole)


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
    the catalog's 0-99 range. Kids the recipient has ("mom of two kids") and a baby on its way ("just
    had a baby") are about someone else, so they are left out before looking.
    """
    lowered = _CONTEXT_PHRASES.sub(",", _KIDS.sub(",", text.lower().replace("’", "'")))
    for pattern in _AGE_PATTERNS:
        found = pattern.search(lowered)
        if found:
            return min(int(found.group(1)), _MAX_AGE)
    for pattern, age in _AGE_WORDS:
        if pattern.search(lowered):
            return age
    return None


# --- context: what a description says besides interests ----------------------------------------------


def _words(*alternatives: str) -> str:
    """One regex alternative matching any of ``alternatives`` as whole words."""
    return r"(?<![a-z0-9])(?:" + "|".join(alternatives) + r")(?![a-z0-9])"


#: Life events a description may mention, each with the occasion it is; read as the occasion's
#: context, never as an interest ("retired" is not a hobby).
_EVENTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (occasion, re.compile(_words(*cues)))
    for occasion, cues in (
        ("retirement", (r"(?:just\s+|newly\s+|recently\s+)?retir(?:ed|ing|ement)",)),
        (
            "baby_shower",
            (
                r"(?:had|has|have|having|expecting|welcom(?:ed|ing))\s+(?:a\s+|their\s+|her\s+|his\s+)?"
                r"(?:new\s+|first\s+|second\s+)?bab(?:y|ies)",
                r"new\s+bab(?:y|ies)\s+(?:on\s+the\s+way|coming)",
                r"baby\s+on\s+the\s+way",
                r"expecting",
                r"pregnant",
                r"new\s+(?:mom|mum|dad|parents?)",
                r"(?:mom|mum|dad|parents?)[\s-]to[\s-]be",
            ),
        ),
        (
            "housewarming",
            (
                r"moving(?:\s+(?:house|home|out|in))?",
                r"(?:just\s+)?moved(?:\s+(?:house|home|out|in))?",
                r"(?:a\s+)?new\s+(?:home|house|apartment|flat|place|condo)",
                r"(?:their|her|his)\s+first\s+(?:home|house|apartment|flat)",
                r"house[\s-]?warming",
            ),
        ),
        (
            "promotion",
            (
                r"(?:starting\s+|started\s+)?(?:a\s+)?new\s+(?:job|role|position)",
                r"(?:got\s+|just\s+)?promoted",
                r"(?:got\s+a\s+)?promotion",
            ),
        ),
        (
            "graduation",
            (r"graduat(?:ed|ing|ion)", r"finish(?:ed|ing)\s+(?:school|college|university|uni)"),
        ),
        ("wedding", (r"getting\s+married", r"just\s+married", r"newlyweds?", r"engaged")),
        (
            "get_well",
            (r"recovering\s+from\s+[a-z]+", r"in\s+(?:the\s+)?hospital", r"after\s+(?:an?\s+)?surgery"),
        ),
    )
)

#: Ways to say someone does not drink alcohol. Cut from the interests too: "doesn't drink" read as a
#: dislike of "drink" would rule out every food & drink gift.
_SOBER = re.compile(
    _words(
        r"sober",
        r"teetotal(?:l?er)?",
        r"(?:does|do|did)\s*n[o']?t\s+drink(?:\s+alcohol)?",
        r"never\s+drinks?",
        r"non[\s-]?drinker",
        r"alcohol[\s-]free",
        r"in\s+recovery",
        r"recovering\s+alcoholic",
    )
)
_CONTEXT_PHRASES = re.compile(
    "|".join([pattern.pattern for _occasion, pattern in _EVENTS] + [_SOBER.pattern])
)

_DIETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("vegan", re.compile(_words(r"vegans?", r"plant[\s-]based"))),
    (
        "vegetarian",
        re.compile(
            _words(
                r"vegetarians?",
                r"veggie",
                r"pescatarian",
                r"(?:does|do)\s*n[o']?t\s+eat\s+meat",
                r"no\s+meat",
                r"meat[\s-]free",
            )
        ),
    ),
)

#: Kids the recipient has or shops for: "has two kids", "mom of three", "for the kids".
_KIDS = re.compile(
    _words(
        r"(?:has|have|having|had|with|of|their|her|his|for\s+the)\s+(?:(?:a|an|two|three|four|five|six|\d+|"
        r"young|little|small|twin|grown|new)\s+)*(?:kids?|children|child|toddlers?|sons?|daughters?|twins)",
        r"(?:mom|mum|dad|mother|father|parent)\s+of\s+(?:two|three|four|five|six|\d+)"
        r"(?:\s+(?:kids?|children|boys|girls|sons|daughters))?",
        r"family\s+(?:man|woman|guy)",
    )
)

_PET_WORDS = {"dog": r"dogs?|pupp(?:y|ies)|pups?", "cat": r"cats?|kittens?|kitty", "pet": r"pets?"}
#: Pets the recipient has: "has a dog", "dog owner", "their two cats".
_PETS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (
        pet,
        re.compile(
            _words(
                r"(?:has|have|had|got|adopted|owns?|with|her|his|their|rescued)\s+(?:(?:a|an|two|three|new|"
                rf"the|\d+|[a-z]+\s+rescue)\s+)*(?:[a-z]+\s+)?(?:{words})",
                rf"(?:{words})\s+(?:owners?|moms?|mums?|dads?|parents?|person|lovers?)",
            )
        ),
    )
    for pet, words in _PET_WORDS.items()
)

#: Words for who someone is to the giver, by kind. The kinds say what a gift can relate to when it
#: matches no interest (`giftgenius.suggest`) and whether the recipient may be a child.
_RELATIONSHIPS: Mapping[str, tuple[str, ...]] = {
    "work": (
        "boss",
        "manager",
        "supervisor",
        "coworker",
        "co-worker",
        "colleague",
        "client",
        "employee",
        "team",
        "teammate",
        "mentor",
        "intern",
        "assistant",
        "ceo",
        "director",
        "office",
    ),
    "father": ("dad", "father", "daddy", "grandpa", "grandfather", "granddad", "stepdad", "father-in-law"),
    "mother": (
        "mom",
        "mum",
        "mother",
        "mommy",
        "grandma",
        "grandmother",
        "granny",
        "stepmom",
        "mother-in-law",
    ),
    "partner": (
        "wife",
        "husband",
        "partner",
        "spouse",
        "boyfriend",
        "girlfriend",
        "fiance",
        "fiancee",
        "fiancé",
        "fiancée",
    ),
    "teacher": ("teacher", "coach", "tutor", "professor"),
    "child": (
        "nephew",
        "niece",
        "son",
        "daughter",
        "grandson",
        "granddaughter",
        "grandchild",
        "grandkid",
        "godson",
        "goddaughter",
        "godchild",
        "stepson",
        "stepdaughter",
        "kid",
        "child",
        "little brother",
        "little sister",
        "baby brother",
        "baby sister",
    ),
}
_RELATIONSHIP = re.compile(
    _words(
        *sorted(
            (
                re.escape(word).replace(r"\ ", r"\s+") + r"s?"
                for words in _RELATIONSHIPS.values()
                for word in words
            ),
            key=len,
            reverse=True,
        )
    )
)


@dataclass(frozen=True, slots=True)
class Context:
    """What a description says about the person besides their interests.

    ``event`` is a life event it mentions, as an occasion ("retired" -> "retirement"), with
    ``event_quote`` the words it used. ``relationship`` is who they are to the giver, as said ("boss"),
    and ``kind`` its kind: work, father, mother, partner, teacher or child (None for one the
    table does not know, such as "friend"). ``traits`` holds what filters the catalog: "vegan",
    "vegetarian", "sober", "kids" (they have or shop for children), and the pets they have, "dog",
    "cat" or "pet".
    """

    event: str | None = None
    event_quote: str | None = None
    relationship: str | None = None
    kind: str | None = None
    traits: frozenset[str] = frozenset()

    def merged(self, hints: Context) -> Context:
        """This context with ``hints`` taking precedence wherever they say something."""
        return Context(
            event=hints.event or self.event,
            event_quote=hints.event_quote if hints.event else self.event_quote,
            relationship=hints.relationship or self.relationship,
            kind=hints.kind if hints.relationship else self.kind,
            traits=self.traits | hints.traits,
        )


def relationship_kind(text: str) -> tuple[str, str | None] | None:
    """The first relationship word in ``text`` and its kind; a text naming none known is returned
    whole with no kind (a hint such as "landlord"), and blank text gives None."""
    lowered = text.lower().replace("’", "'")
    found = _RELATIONSHIP.search(lowered)
    if found is None:
        return (" ".join(lowered.split()), None) if lowered.strip() else None
    said = " ".join(found.group(0).split())
    for kind, words in _RELATIONSHIPS.items():
        if said in words or said.removesuffix("s") in words:
            return said, kind
    return said, None


#: A hint that is only one of these words names a trait ("kids" among someone's interests).
_TRAIT_WORDS: Mapping[str, str] = {
    "kids": "kids",
    "children": "kids",
    "family": "kids",
    "parenting": "kids",
    "parent": "kids",
    "vegan": "vegan",
    "vegetarian": "vegetarian",
    "sober": "sober",
    "dog": "dog",
    "dogs": "dog",
    "cat": "cat",
    "cats": "cat",
    "pets": "pet",
}


def read_context(text: str, *, listed: Iterable[str] = ()) -> Context:
    """The life event, relationship, diet, kids and pets that ``text`` speaks of.

    ``listed`` are single interests (a hint list, or a bulk row's interests): one that is only a
    trait word ("kids", "vegan") states that trait, where a description would say "has kids".
    "No alcohol" and "allergic to cats" need no trait: they are dislikes, and rule gifts out as such.
    """
    lowered = text.lower().replace("’", "'")
    events = [
        (found.start(), occasion, found.group(0))
        for occasion, pattern in _EVENTS
        if (found := pattern.search(lowered))
    ]
    event = min(events) if events else None
    traits = {diet for diet, pattern in _DIETS if pattern.search(lowered)}
    if _SOBER.search(lowered):
        traits.add("sober")
    if _KIDS.search(lowered):
        traits.add("kids")
    traits.update(pet for pet, pattern in _PETS if pattern.search(lowered))
    traits.update(_TRAIT_WORDS[key] for item in listed if (key := " ".join(tokenize(item))) in _TRAIT_WORDS)
    relation = relationship_kind(lowered) if _RELATIONSHIP.search(lowered) else None
    return Context(
        event=event[1] if event else None,
        event_quote=" ".join(event[2].split()) if event else None,
        relationship=relation[0] if relation else None,
        kind=relation[1] if relation else None,
        traits=frozenset(traits),
    )
