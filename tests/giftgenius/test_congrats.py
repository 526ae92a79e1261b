"""The card-writing prompt carries the name, occasion and tone, and rejects bad input clearly."""

from __future__ import annotations

import pytest

from giftgenius.congrats import TONES, congrats_prompt


def test_tones() -> None:
    assert TONES == ("warm", "formal", "playful", "heartfelt", "funny")


@pytest.mark.parametrize("tone", TONES)
def test_prompt_mentions_name_occasion_and_tone(tone: str) -> None:
    system, user = congrats_prompt("Maya", "graduation", tone)
    assert tone in system
    assert "Maya" in user
    assert "graduation" in user
    assert tone in user
    assert "congratulate" in system


def test_default_tone_is_warm() -> None:
    system, _user = congrats_prompt("Sam", "birthday")
    assert "warm" in system


def test_occasion_is_normalized() -> None:
    _system, user = congrats_prompt("Ana", "Baby shower", "Playful")
    assert "a baby shower" in user
    _system, user = congrats_prompt("Ana", "valentine's day")
    assert "Valentine's Day" in user


def test_get_well_is_not_congratulations() -> None:
    system, _user = congrats_prompt("Lee", "get well")
    assert "recovery" in system
    assert "congratulate" not in system


def test_unknown_tone_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="warm, formal, playful, heartfelt, funny"):
        congrats_prompt("Maya", "birthday", "sarcastic")


@pytest.mark.parametrize(("name", "occasion"), [("", "birthday"), ("Maya", "  ")])
def test_blank_inputs_raise(name: str, occasion: str) -> None:
    with pytest.raises(ValueError, match="must"):
        congrats_prompt(name, occasion)
