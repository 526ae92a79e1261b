"""Free text becomes interest terms that find the right gifts."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from giftgenius.catalog import Catalog, Gift, load_catalog
from giftgenius.matching import (
    STOP_WORDS,
    age_hint,
    closest_table,
    excluded,
    extract_interests,
    given_interests,
    match_gift,
    read_context,
    serves,
    stem,
    text_terms,
    tokenize,
)

BOARD_GAMES = ("board", "game")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _ranked(catalog: Catalog, text: str) -> list[Gift]:
    interests = extract_interests(text)
    return sorted(catalog.gifts, key=lambda gift: (-match_gift(interests, gift).score, gift.id))


def test_tokenize_lowercases_and_splits_punctuation() -> None:
    assert tokenize("Loves Board-Games, Tea & my sister's CATS!") == [
        "loves",
        "board",
        "games",
        "tea",
        "my",
        "sister",
        "cats",
    ]


def test_stemming_folds_word_forms() -> None:
    assert stem("games") == stem("game")
    assert stem("hiking") == stem("hike")
    assert stem("gardening") == stem("garden")


def test_stop_words_and_people_words_are_dropped() -> None:
    interests = extract_interests("my best friend who really loves the")
    assert not interests
    assert {"who", "loves", "friend"} <= STOP_WORDS


def test_phrases_are_terms() -> None:
    assert ("board", "game") in text_terms("board games")
    assert ("board", "game") in extract_interests("loves board games").terms


@pytest.mark.parametrize("text", ["board games", "loves board games", "boardgames", "tabletop games"])
def test_board_game_phrasings_find_board_games_first(catalog: Catalog, text: str) -> None:
    top = _ranked(catalog, text)[:5]
    assert all("board games" in gift.tags for gift in top), [gift.id for gift in top]


@pytest.mark.parametrize("text", ["sci-fi", "scifi", "Sci Fi fan", "science fiction"])
def test_science_fiction_synonyms(catalog: Catalog, text: str) -> None:
    interests = extract_interests(text)
    assert ("scienc", "fiction") in interests.terms
    top = _ranked(catalog, text)[:5]
    assert all("science fiction" in gift.tags for gift in top), [gift.id for gift in top]
    assert match_gift(interests, top[0]).matched[0] == "science fiction"


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("a coder", "programming"),
        ("software developer", "programming"),
        ("programmer", "programming"),
        ("trekking", "hiking"),
        ("bookworm", "reading"),
        ("gamer", "gaming"),
        ("runner", "running"),
        ("foodie", "cooking"),
        ("stargazer", "astronomy"),
        ("yogi", "yoga"),
        ("knitter", "knitting"),
        ("green thumb", "gardening"),
        ("photographer", "photography"),
        ("kitty", "cats"),
        ("puppy", "dogs"),
    ],
)
def test_synonyms_reach_catalog_tags(catalog: Catalog, text: str, tag: str) -> None:
    top = _ranked(catalog, text)[0]
    assert tag in top.tags, (text, top.id)


def test_foodie_counts_as_one_interest() -> None:
    interests = extract_interests("foodie")
    assert len(interests.groups) == 1
    assert {("cook",), ("food",)} <= interests.terms


def test_tags_outweigh_description(catalog: Catalog) -> None:
    hiking = extract_interests("hiking")
    # The binoculars mention hiking only in their description; the poles are tagged "hiking".
    described = match_gift(hiking, catalog.by_id("compact-binoculars-10x42")).score
    tagged = match_gift(hiking, catalog.by_id("carbon-trekking-poles")).score
    assert 0 < described < tagged


def test_separate_interests_are_separate_groups() -> None:
    interests = extract_interests("hiking, coffee and photography")
    assert len(interests.groups) == 3


def test_matched_labels_are_readable(catalog: Catalog) -> None:
    match = match_gift(
        extract_interests("friend who loves board games"),
        catalog.by_id("polyhedral-dice-set-for-roleplaying"),
    )
    assert match.matched == ("board games",)


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("my 8-year-old nephew", 8),
        ("a 12 year old who loves space", 12),
        ("grandpa turning 80", 80),
        ("for her 40th birthday", 40),
        ("a toddler", 2),
        ("the new baby", 0),
        ("my kid", 8),
        ("a teenager into music", 15),
        ("a 150-year-old tortoise", 99),
        ("my colleague who loves tea", None),
    ],
)
def test_age_hint(text: str, age: int | None) -> None:
    assert age_hint(text) == age


# --- negation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "someone who hates board games",
        "my uncle, who hate board games",
        "doesn't like board games",
        "doesn’t like board games",
        "does not like board games",
        "dislikes board games",
        "not into board games",
        "no board games please",
        "can't stand board games",
        "isn't a fan of board games",
        "is not really a big fan of boardgames",
        "no longer likes board games",
        "Dislikes: board games",
    ],
)
def test_negated_interests_are_ruled_out_not_counted(catalog: Catalog, text: str) -> None:
    interests = extract_interests(text)
    assert BOARD_GAMES not in interests.terms
    said = next(word for word in ("board games", "boardgames") if word in text)
    assert interests.disliked[0].text == said
    board_games = [gift for gift in catalog.gifts if "board games" in gift.tags]
    assert board_games
    assert all(excluded(interests, gift) for gift in board_games)


def test_a_dislike_rules_out_only_its_whole_phrase(catalog: Catalog) -> None:
    interests = extract_interests("hates board games")
    # "games" alone is not what they dislike: video games stay, and so does every unrelated gift.
    assert not excluded(interests, catalog.by_id("wireless-game-controller"))
    kept = [gift for gift in catalog.gifts if not excluded(interests, gift)]
    assert len(kept) > len(catalog.gifts) - 20


@pytest.mark.parametrize(
    ("text", "liked", "disliked"),
    [
        ("hates board games but loves puzzles", ["puzzles"], ["board games"]),
        ("doesn't like coffee and loves tea", ["tea"], ["coffee"]),
        ("hates crowds, loves hiking", ["hiking"], ["crowds"]),
        ("loves tea, not coffee", ["tea"], ["coffee"]),
        ("loves all games except board games", ["games"], ["board games"]),
        ("no board games or puzzles", [], ["board games", "puzzles"]),
        ("hates things like golf", [], ["golf"]),
        ("not only hiking but coffee", ["hiking", "coffee"], []),
    ],
)
def test_negation_scope(text: str, liked: list[str], disliked: list[str]) -> None:
    interests = extract_interests(text)
    assert [interest.text for interest in interests.liked] == liked
    assert [interest.text for interest in interests.disliked] == disliked


def test_hyphenated_no_is_not_a_negation(catalog: Catalog) -> None:
    interests = extract_interests("a no-nonsense cook")
    assert not interests.disliked
    assert ("cook",) in interests.terms
    assert "cooking" in _ranked(catalog, "a no-nonsense cook")[0].tags


def test_a_dislike_wins_over_a_like_of_the_same_thing() -> None:
    interests = extract_interests("loves coffee. Actually, hates coffee")
    assert ("coffe",) not in interests.terms
    assert [interest.text for interest in interests.disliked] == ["coffee"]


def test_synonyms_can_be_disliked(catalog: Catalog) -> None:
    interests = extract_interests("no alcohol")
    assert excluded(interests, catalog.by_id("twelve-year-single-malt-whisky"))
    assert excluded(interests, catalog.by_id("wine-and-cheese-gift-basket"))
    assert not excluded(interests, catalog.by_id("single-origin-coffee-sampler"))


# --- what a gift matched, in the description's words -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quote", "label"),
    [
        ("my brother, a huge Sci-Fi fan", "sci-fi", "science fiction"),
        ("loves Hiking", "hiking", "hiking"),
        ("a bookworm", "bookworm", "reading"),
    ],
)
def test_hits_quote_the_description(catalog: Catalog, text: str, quote: str, label: str) -> None:
    top = _ranked(catalog, text)[0]
    hit = match_gift(extract_interests(text), top).hits[0]
    assert (hit.quote, hit.label, hit.closest) == (quote, label, False)


def test_quotes_are_the_words_not_the_stems(catalog: Catalog) -> None:
    interests = extract_interests("she enjoys gardening and cats")
    hits = {hit.quote for gift in catalog.gifts for hit in match_gift(interests, gift).hits}
    assert hits == {"gardening", "cats"}


# --- interests the catalog cannot serve ---------------------------------------------------------------


def test_fishing_finds_tackle_not_an_aquarium(catalog: Catalog) -> None:
    interests = extract_interests("my dad who likes fishing")
    (fishing,) = interests.liked
    assert (fishing.text, fishing.closest, fishing.stated) == ("fishing", False, True)
    # Snowball stems "fishing" to "fish", which would match the aquarium starter kit.
    assert not serves(fishing, catalog.by_id("aquarium-starter-kit"))
    top = _ranked(catalog, "my dad who likes fishing")[:5]
    assert all("fishing" in gift.tags for gift in top), [gift.id for gift in top]


def test_sailing_is_a_stand_in(catalog: Catalog) -> None:
    interests = extract_interests("my dad who likes sailing")
    (sailing,) = interests.liked
    assert (sailing.text, sailing.closest, sailing.stated) == ("sailing", True, True)
    assert sailing.phrases == closest_table()["sailing"]
    top = _ranked(catalog, "my dad who likes sailing")[0]
    hit = match_gift(interests, top).hits[0]
    assert hit.closest
    assert hit.quote == "sailing"
    assert hit.label in sailing.phrases


def test_disliking_a_missing_hobby_rules_nothing_out(catalog: Catalog) -> None:
    interests = extract_interests("hates sailing")
    assert not interests.liked
    assert not any(excluded(interests, gift) for gift in catalog.gifts)


@pytest.mark.parametrize(
    ("text", "stated"),
    [("likes origami", True), ("a fan of origami", True), ("my coworker Dana", False), ("origami", False)],
)
def test_only_interests_said_with_a_liking_cue_are_stated(text: str, stated: bool) -> None:
    (interest,) = extract_interests(text).liked
    assert interest.stated is stated


def test_closest_table_is_honest(catalog: Catalog) -> None:
    """Stand-ins are real catalog tags, and no gift's text mentions a hobby the table calls missing."""
    tags = {tag for gift in catalog.gifts for tag in gift.tags}
    words = {
        word
        for gift in catalog.gifts
        for word in tokenize(" ".join((gift.name, gift.description, *gift.tags)))
    }
    table = closest_table()
    for key, phrases in table.items():
        assert set(phrases) <= tags, key
        assert not set(key.split()) & words, key


def test_stemming_on_several_threads_at_once_gives_each_word_its_own_stem() -> None:
    """Bulk analyses run on worker threads, several at once: a shared stemmer would mix
    their words up (or fail with IndexError)."""
    bases = ("hike", "game", "garden", "run", "cook", "read", "paint", "photograph", "travel", "knit")
    words = [base + ending for base in bases for ending in ("", "s", "ing", "ed", "er", "ers", "ful")] * 60
    unstored = stem.__wrapped__  # past the cache, so every call stems
    expected = [unstored(word) for word in words]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        with ThreadPoolExecutor(4) as pool:
            found = list(pool.map(lambda _: [unstored(word) for word in words], range(4)))
    finally:
        sys.setswitchinterval(interval)
    assert all(stems == expected for stems in found)


# --- context: what a description says besides interests ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "event", "not_interests"),
    [
        ("my dad, recently retired, loves golf", "retirement", {"retired", "recently retired"}),
        ("coworker who just had a new baby", "baby_shower", {"baby", "new baby"}),
        ("my sister is moving into a new apartment", "housewarming", {"moving", "apartment"}),
        ("friend who just got a new job, loves coffee", "promotion", {"job", "new job"}),
        ("my cousin just graduated, into photography", "graduation", {"graduated"}),
    ],
)
def test_life_events_are_context_not_interests(text: str, event: str, not_interests: set[str]) -> None:
    assert read_context(text).event == event
    said = {interest.text for interest in extract_interests(text).liked}
    assert not said & not_interests, said


@pytest.mark.parametrize(
    ("text", "relationship", "kind"),
    [
        ("boss who collects vinyl records", "boss", "work"),
        ("teenage nephew obsessed with Minecraft", "nephew", "child"),
        ("my Mom", "mom", "mother"),
        ("my best friend", None, None),
    ],
)
def test_relationships_are_read_with_their_kind(
    text: str, relationship: str | None, kind: str | None
) -> None:
    context = read_context(text)
    assert (context.relationship, context.kind) == (relationship, kind)


@pytest.mark.parametrize(
    ("text", "traits"),
    [
        ("my sister, vegan, loves cooking", {"vegan"}),
        ("vegetarian who loves snacks", {"vegetarian"}),
        ("doesn't drink, loves cooking", {"sober"}),
        ("mom of two kids", {"kids"}),
        ("has a dog and loves hiking", {"dog"}),
        ("cat owner", {"cat"}),
        ("allergic to cats, no pets", set()),
    ],
)
def test_traits_are_read(text: str, traits: set[str]) -> None:
    assert read_context(text).traits == traits


def test_a_trait_can_be_listed_alone() -> None:
    assert read_context("colleague", listed=["Kids", "board games"]).traits == {"kids"}


def test_not_drinking_does_not_rule_out_food_and_drink() -> None:
    interests = extract_interests("doesn't drink, loves cooking")
    assert not interests.disliked
    assert [interest.text for interest in interests.liked] == ["cooking"]


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("mom of two kids", None),
        ("my colleague who has three children", None),
        ("coworker who had a baby", None),
    ],
)
def test_someone_elses_children_are_not_the_recipients_age(text: str, age: int | None) -> None:
    assert age_hint(text) == age


def test_given_interests_replace_the_description_and_avoid_adds(catalog: Catalog) -> None:
    parsed = extract_interests("loves board games, hates golf")
    hinted = given_interests(parsed, ["fishing"], ["coffee"])
    assert [(interest.text, interest.given) for interest in hinted.liked] == [("fishing", True)]
    assert {interest.text for interest in hinted.disliked} == {"golf", "coffee"}
    assert excluded(hinted, catalog.by_id("single-origin-coffee-sampler"))
    assert given_interests(parsed, [], []).liked == parsed.liked
