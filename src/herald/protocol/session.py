"""The handshake-era session as a transition table.

Theory of operation
-------------------
A session starts in AWAITING_INITIALIZE. The client's `initialize` request moves it to
INITIALIZING once answered; `notifications/initialized` moves it to OPERATING, and only
then may the server send messages of its own (list changes, log messages, resource
updates). `ping` is legal in every open state. Any other request before `initialize`
is refused, as is a second `initialize`. CLOSED refuses everything.

The table below is the whole rule set: `(state, input) -> (verdict, next state)`.
Every pair is listed, so a hypothesis test can walk all of them, and the connection
code never decides a session rule of its own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class SessionState(enum.Enum):
    AWAITING_INITIALIZE = "awaiting_initialize"
    INITIALIZING = "initializing"
    OPERATING = "operating"
    CLOSED = "closed"


class SessionInput(enum.Enum):
    INITIALIZE = "initialize"
    INITIALIZED = "notifications/initialized"
    PING = "ping"
    REQUEST = "request"
    NOTIFICATION = "notification"
    CLOSE = "close"


class Verdict(enum.Enum):
    ACCEPT = "accept"
    IGNORE = "ignore"
    REFUSE_NOT_INITIALIZED = "refuse_not_initialized"
    REFUSE_ALREADY_INITIALIZED = "refuse_already_initialized"
    REFUSE_CLOSED = "refuse_closed"


S, E, V = SessionState, SessionInput, Verdict

TRANSITIONS: Final[dict[tuple[SessionState, SessionInput], tuple[Verdict, SessionState]]] = {
    (S.AWAITING_INITIALIZE, E.INITIALIZE): (V.ACCEPT, S.INITIALIZING),
    (S.AWAITING_INITIALIZE, E.INITIALIZED): (V.IGNORE, S.AWAITING_INITIALIZE),
    (S.AWAITING_INITIALIZE, E.PING): (V.ACCEPT, S.AWAITING_INITIALIZE),
    (S.AWAITING_INITIALIZE, E.REQUEST): (V.REFUSE_NOT_INITIALIZED, S.AWAITING_INITIALIZE),
    (S.AWAITING_INITIALIZE, E.NOTIFICATION): (V.IGNORE, S.AWAITING_INITIALIZE),
    (S.AWAITING_INITIALIZE, E.CLOSE): (V.ACCEPT, S.CLOSED),
    (S.INITIALIZING, E.INITIALIZE): (V.REFUSE_ALREADY_INITIALIZED, S.INITIALIZING),
    (S.INITIALIZING, E.INITIALIZED): (V.ACCEPT, S.OPERATING),
    (S.INITIALIZING, E.PING): (V.ACCEPT, S.INITIALIZING),
    # A client may pipeline work right behind `initialize`; it was answered, so serve it.
    (S.INITIALIZING, E.REQUEST): (V.ACCEPT, S.INITIALIZING),
    (S.INITIALIZING, E.NOTIFICATION): (V.ACCEPT, S.INITIALIZING),
    (S.INITIALIZING, E.CLOSE): (V.ACCEPT, S.CLOSED),
    (S.OPERATING, E.INITIALIZE): (V.REFUSE_ALREADY_INITIALIZED, S.OPERATING),
    (S.OPERATING, E.INITIALIZED): (V.IGNORE, S.OPERATING),
    (S.OPERATING, E.PING): (V.ACCEPT, S.OPERATING),
    (S.OPERATING, E.REQUEST): (V.ACCEPT, S.OPERATING),
    (S.OPERATING, E.NOTIFICATION): (V.ACCEPT, S.OPERATING),
    (S.OPERATING, E.CLOSE): (V.ACCEPT, S.CLOSED),
    (S.CLOSED, E.INITIALIZE): (V.REFUSE_CLOSED, S.CLOSED),
    (S.CLOSED, E.INITIALIZED): (V.IGNORE, S.CLOSED),
    (S.CLOSED, E.PING): (V.REFUSE_CLOSED, S.CLOSED),
    (S.CLOSED, E.REQUEST): (V.REFUSE_CLOSED, S.CLOSED),
    (S.CLOSED, E.NOTIFICATION): (V.IGNORE, S.CLOSED),
    (S.CLOSED, E.CLOSE): (V.IGNORE, S.CLOSED),
}


def classify(method: str, *, is_request: bool) -> SessionInput:
    """Map an incoming message to the table's input alphabet."""
    if is_request:
        if method == "initialize":
            return SessionInput.INITIALIZE
        if method == "ping":
            return SessionInput.PING
        return SessionInput.REQUEST
    if method == "notifications/initialized":
        return SessionInput.INITIALIZED
    return SessionInput.NOTIFICATION


@dataclass(slots=True)
class HandshakeSession:
    """The state of one handshake-era session: plain data, so any store can hold it."""

    state: SessionState = SessionState.AWAITING_INITIALIZE
    protocol_version: str | None = None

    def verdict_for(self, event: SessionInput) -> Verdict:
        """What `receive` would decide, without changing anything."""
        return TRANSITIONS[(self.state, event)][0]

    def receive(self, event: SessionInput) -> Verdict:
        """Apply one input. A refused or ignored input leaves the state as it was."""
        verdict, next_state = TRANSITIONS[(self.state, event)]
        self.state = next_state
        return verdict

    @property
    def may_notify(self) -> bool:
        """Whether the server may send messages of its own initiative."""
        return self.state is SessionState.OPERATING
