"""Server-initiated notifications: who hears them here, and the replicas that hear them too.

A list that changed (`notifications/tools/list_changed`…) or a resource that changed
(`notifications/resources/updated`) is told to every live connection and listen of this
process, each of which checks what it follows. Where replicas share sessions, the relay
(`herald.transports.http.relay`) is told each one as well, to pass to the others, and tells
this process what the others sent theirs (`tell_from_elsewhere`).
"""

from __future__ import annotations

from collections.abc import Callable

from herald.listeners import Listeners
from herald.protocol.messages import Notification

__all__ = ["NotificationListener", "Notifications"]

#: Hears a notification, with the resource URI of `notifications/resources/updated` (else None).
NotificationListener = Callable[[Notification, str | None], None]


class Notifications:
    """The hub of one server's notifications (`Server.notifications`)."""

    def __init__(self) -> None:
        self._listeners: Listeners[[Notification, str | None]] = Listeners()
        #: Also told each notification this process sends, to pass it to the other replicas.
        self.relay: NotificationListener | None = None

    def add_listener(self, listener: NotificationListener) -> Callable[[], None]:
        """Hear every notification this process tells; returns the function that stops it."""
        return self._listeners.add(listener)

    def send(self, notification: Notification, uri: str | None = None) -> None:
        """Tell every listener here, and the other replicas through the relay."""
        self._listeners.tell(notification, uri)
        if self.relay is not None:
            self.relay(notification, uri)

    def tell_from_elsewhere(self, notification: Notification, uri: str | None) -> None:
        """Tell this process's listeners what another replica sent its own."""
        self._listeners.tell(notification, uri)
