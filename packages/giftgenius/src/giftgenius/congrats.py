"""Prompt text for writing the card that goes with a gift.

The app does not write the card itself; it hands a language model a clear brief. Keeping the brief
here, as plain strings, lets it be reviewed and tested without any model or protocol involved.
"""

from __future__ import annotations

from collections.abc import Mapping

from giftgenius.catalog import normalize_occasion, occasion_phrase

__all__ = ["TONES", "congrats_prompt"]

# How each tone should sound; the wording goes straight into the system message.
_TONE_GUIDES: Mapping[str, str] = {
    "warm": "friendly and sincere, like a note from someone who knows them well",
    "formal": "polite and polished, suitable for a colleague, client or acquaintance",
    "playful": "light and cheerful, with a gentle sense of fun",
    "heartfelt": "deeply personal and moving, without becoming overly sentimental",
    "funny": "witty and good-humoured, with one clear joke that stays kind",
}

#: The tones :func:`congrats_prompt` accepts.
TONES: tuple[str, ...] = tuple(_TONE_GUIDES)

# Occasions where "congratulations" is the wrong word; the card should comfort or thank instead.
_NOT_CONGRATULATORY: Mapping[str, str] = {
    "get_well": "wish them a swift and comfortable recovery",
    "thank_you": "thank them warmly and specifically",
    "farewell": "wish them well on what comes next",
}


def congrats_prompt(recipient_name: str, occasion: str, tone: str = "warm") -> tuple[str, str]:
    """The (system message, user message) pair for writing a card message.

    ``occasion`` accepts the same everyday spellings as gift suggestions ("Baby shower", "xmas").
    Raises ``ValueError`` for a blank name or occasion, or a tone outside :data:`TONES`.
    """
    name = recipient_name.strip()
    if not name:
        raise ValueError("recipient_name must be the name to address the card to, e.g. 'Maya'")
    if not occasion.strip():
        raise ValueError("occasion must be a non-empty string such as 'birthday' or 'wedding'")
    tone_key = tone.strip().lower()
    guide = _TONE_GUIDES.get(tone_key)
    if guide is None:
        raise ValueError(f"unknown tone {tone!r}; choose one of: {', '.join(TONES)}")

    normalized = normalize_occasion(occasion)
    phrase = occasion_phrase(normalized)
    purpose = _NOT_CONGRATULATORY.get(normalized, "congratulate them")
    system_message = (
        "You write short messages for greeting cards that accompany a gift. "
        f"The tone is {tone_key}: {guide}. "
        "Write two to four sentences in plain language. Address the recipient by name, "
        f"{purpose}, and end with a warm closing line. "
        "Do not mention the gift's price, do not invent personal details, and do not add a signature; "
        "the sender will sign the card."
    )
    user_message = (
        f"Write a {tone_key} card message for {name} for {phrase}. "
        "Return only the message text, ready to copy into the card."
    )
    return system_message, user_message
