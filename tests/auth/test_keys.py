"""The issuer's keys: a token whose key is in hand never waits on the issuer, and an issuer that
hangs costs one fetch per cooldown, however many made-up key ids arrive.

Against the test authorization server (`issuer.py`), made to hang: it takes every request
and answers none. The verifier's clock is injected, so a cooldown or a key set's lifetime
passes without waiting; the fetch deadline is real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from herald.auth.config import AuthConfig
from herald.auth.keys import KEY_FETCH_DEADLINE, KEY_REFRESH_COOLDOWN
from herald.auth.tokens import JwtVerifier
from herald.auth.verifier import InvalidToken, IssuerUnreachable
from tests.auth.issuer import Issuer, new_key

AUDIENCE = "http://127.0.0.1:1/mcp"
#: Seconds within which a token whose key is in hand is checked: generous, it takes milliseconds.
PROMPT = 2.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def verifying(issuer: Issuer, clock: Clock) -> AsyncIterator[JwtVerifier]:
    """A verifier for `issuer`, serving, whose keys are fetched (one token checked)."""
    async with issuer.serving(), JwtVerifier(AuthConfig(issuer.url, AUDIENCE), clock=clock) as verifier:
        await verifier.verify(issuer.mint(audience=AUDIENCE))
        assert issuer.jwks_fetches == 1
        yield verifier


async def refusal(verifier: JwtVerifier, token: str) -> Exception:
    """Why `verifier` refuses `token`."""
    try:
        await verifier.verify(token)
    except (InvalidToken, IssuerUnreachable) as refused:
        return refused
    raise AssertionError("the token was accepted")


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not condition():  # noqa: ASYNC110  # the issuer's counters have no event to wait on
            await asyncio.sleep(0.01)


@pytest.mark.slow
async def test_a_hung_issuer_holds_up_only_a_key_not_in_hand_and_only_once_per_cooldown() -> None:
    issuer, clock = Issuer(), Clock()
    async with verifying(issuer, clock) as verifier:
        good = issuer.mint(audience=AUDIENCE)
        clock.now += KEY_REFRESH_COOLDOWN  # a key not in hand may now send for the keys again
        issuer.hang()
        asked = issuer.requests
        async with asyncio.TaskGroup() as tasks:
            forged = tasks.create_task(refusal(verifier, issuer.mint(audience=AUDIENCE, key_id="forged")))
            await until(lambda: issuer.requests == asked + 1)  # its fetch is stuck at the issuer
            async with asyncio.timeout(PROMPT):
                assert (await verifier.verify(good)).subject == "someone"
            async with asyncio.timeout(KEY_FETCH_DEADLINE + PROMPT):
                why = await forged
        assert isinstance(why, IssuerUnreachable)
        assert "did not give its keys within" in str(why)
        asked = issuer.requests
        for number in range(20):
            async with asyncio.timeout(PROMPT):
                with pytest.raises(IssuerUnreachable):
                    await verifier.verify(issuer.mint(audience=AUDIENCE, key_id=f"forged-{number}"))
                assert (await verifier.verify(good)).subject == "someone"
        assert issuer.requests == asked, "no fetch within the cooldown of the one that failed"

        issuer.key, issuer.key_id = new_key(), "key-2"  # the issuer is back, with a new key
        issuer.answer()
        rotated = issuer.mint(audience=AUDIENCE)
        clock.now += KEY_REFRESH_COOLDOWN
        assert (await verifier.verify(rotated)).subject == "someone"
        assert issuer.jwks_fetches == 2
        with pytest.raises(InvalidToken, match="'key-1', which the issuer does not publish"):
            await verifier.verify(good)


async def test_keys_past_their_lifetime_serve_while_they_are_fetched_again() -> None:
    issuer, clock = Issuer(), Clock()
    async with verifying(issuer, clock) as verifier:
        good = issuer.mint(audience=AUDIENCE)
        clock.now += verifier.config.keys_ttl
        issuer.hang()
        asked = issuer.requests
        for _ in range(5):
            async with asyncio.timeout(PROMPT):
                assert (await verifier.verify(good)).subject == "someone"
        await until(lambda: issuer.requests == asked + 1)  # one fetch, in the background
        issuer.answer()
        await until(lambda: issuer.jwks_fetches == 2)
        assert issuer.requests == asked + 2, "the metadata, then the keys"
