"""Free text becomes interest terms that find the right gifts."""

from __future__ import annotations

import pytest

from giftgenius.catalog import Catalog, Gift, load_catalog
from giftgenius.matching import (
    STOP_WORDS,
    age_hint,
    extract_interests,
    match_gift,
    stem,
    text_terms,
    tokenize,
)


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
