"""The handshake session table: every (state, input) pair, as the table says."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.session import (
    TRANSITIONS,
    HandshakeSession,
    SessionInput,
    SessionState,
    Verdict,
    classify,
)


def test_table_is_total() -> None:
    assert set(TRANSITIONS) == set(itertools.product(SessionState, SessionInput))


@pytest.mark.parametrize(("state", "event"), list(itertools.product(SessionState, SessionInput)))
def test_each_pair(state: SessionState, event: SessionInput) -> None:
    session = HandshakeSession(state=state)
    verdict, expected = TRANSITIONS[(state, event)]
    assert session.verdict_for(event) is verdict
    assert session.state is state  # peeking changes nothing
    assert session.receive(event) is verdict
    assert session.state is expected
    if verdict is not Verdict.ACCEPT:
        assert session.state is state, "a refused or ignored input leaves the state as it was"


@given(st.lists(st.sampled_from(list(SessionInput)), max_size=30))
def test_any_sequence(events: list[SessionInput]) -> None:
    session = HandshakeSession()
    initialized = False
    for event in events:
        before = session.state
        verdict = session.receive(event)
        if before is SessionState.CLOSED:
            assert session.state is SessionState.CLOSED
            assert verdict is not Verdict.ACCEPT
        if event is SessionInput.REQUEST and not initialized and before is not SessionState.CLOSED:
            assert verdict is Verdict.REFUSE_NOT_INITIALIZED
        if event is SessionInput.INITIALIZE and verdict is Verdict.ACCEPT:
            assert not initialized, "initialize is accepted once"
            initialized = True
        if session.may_notify:
            assert session.state is SessionState.OPERATING


def test_server_may_notify_only_after_initialized() -> None:
    session = HandshakeSession()
    assert not session.may_notify
    session.receive(SessionInput.INITIALIZE)
    assert not session.may_notify
    session.receive(SessionInput.INITIALIZED)
    assert session.may_notify


def test_classify() -> None:
    assert classify("initialize", is_request=True) is SessionInput.INITIALIZE
    assert classify("ping", is_request=True) is SessionInput.PING
    assert classify("tools/list", is_request=True) is SessionInput.REQUEST
    assert classify("notifications/initialized", is_request=False) is SessionInput.INITIALIZED
    assert classify("notifications/cancelled", is_request=False) is SessionInput.NOTIFICATION
