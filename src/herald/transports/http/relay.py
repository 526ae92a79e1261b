"""What HTTP replicas tell each other through the session store they share.

A client's stream (a handshake-era GET, a 2026-07-28 `subscriptions/listen`) is open on
one replica, while the change it wants to hear of may happen on another: a tool call
there updates a resource (`notifications/resources/updated`), or changes a list
(`notifications/*/list_changed`). So each replica publishes the notifications it sends
its own clients, and tells its own clients what the others published. Job events need
none of this: they are in the job store, which every replica follows already. Likewise a
replica that changes a shared session (a subscription, the log level) or ends it says
so, and the others' copies load it again at once rather than at their next revalidation.

The relay also passes on that answers to a task's input were left in the job store
(`tasks/update` served by a replica that does not run the task), so the one that runs it
looks at once rather than at its next poll.

Messages are hints, at most once (Redis pub/sub; a SQLite table polled five times a
second). A notification lost with a dropped connection is lost as it would be on one
replica whose client reconnects; a lost answer hint only delays the task by its poll.
On start the relay also adopts the store's shared `requestState` key, unless one was
configured (`HERALD_STATE_KEY`), so a multi-round request begun on one replica goes on
at any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

import orjson

from herald.protocol.messages import Notification
from herald.server.app import Server
from herald.stores.errors import StoreError
from herald.stores.sessions import SessionStore
from herald.taskgroup import task_group
from herald.transports.http.sessions import SessionRegistry

logger = logging.getLogger("herald")

#: How many messages wait to be published before the oldest are dropped (a stalled store).
OUTBOX_SIZE = 10_000
#: How long the relay waits before following a store again that failed.
RETRY_SECONDS = 1.0


class ReplicaRelay:
    """Publishes this replica's notifications and tells its clients the other replicas'."""

    def __init__(self, server: Server, store: SessionStore, sessions: SessionRegistry) -> None:
        self.server = server
        self.store = store
        self.sessions = sessions
        self.replica = secrets.token_hex(8)
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue(OUTBOX_SIZE)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ReplicaRelay]:
        """Relay for as long as the block runs (the server's lifespan)."""
        if not self.server.state_key_configured:
            self.server.state_key = await self.store.shared_key()
        async with task_group() as tasks:
            follower = tasks.create_task(self._follow())
            publisher = tasks.create_task(self._publish_outbox())
            self.server.notifications.relay = self._notification_sent
            self.server.tasks.answers_left = self._answers_left
            self.sessions.changed = self._session_changed
            try:
                yield self
            finally:
                self.server.notifications.relay = None
                self.server.tasks.answers_left = None
                self.sessions.changed = None
                follower.cancel()
                publisher.cancel()

    async def _follow(self) -> None:
        """Follow the store for good: a store that fails is followed again a moment later."""
        while True:
            try:
                await self.store.follow(self._heard)
            except StoreError as error:
                logger.warning("not hearing the other replicas for a moment: %s", error)
                await asyncio.sleep(RETRY_SECONDS)

    def _notification_sent(self, notification: Notification, uri: str | None) -> None:
        message = {"method": notification.method, "params": notification.params, "uri": uri}
        self._send({"kind": "notification", **message})

    def _answers_left(self, job_id: str) -> None:
        self._send({"kind": "task-input", "jobId": job_id})

    def _session_changed(self, session_id: str) -> None:
        self._send({"kind": "session", "sessionId": session_id})

    def _send(self, message: dict[str, Any]) -> None:
        if self._outbox.full():
            self._outbox.get_nowait()  # hints: the newest matter more than the oldest
        self._outbox.put_nowait(orjson.dumps({"from": self.replica, **message}))

    async def _publish_outbox(self) -> None:
        while True:
            message = await self._outbox.get()
            try:
                await self.store.publish(message)
            except StoreError as error:
                logger.warning("a notification for the other replicas was lost: %s", error)

    async def _heard(self, data: bytes) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            return  # not from a replica of ours
        if not isinstance(message, dict) or message.get("from") == self.replica:
            return
        kind = message.get("kind")
        if kind == "notification" and isinstance(method := message.get("method"), str):
            params = message.get("params")
            uri = message.get("uri")
            notification = Notification(method, params if isinstance(params, dict) else None)
            self.server.notifications.tell_from_elsewhere(notification, uri if isinstance(uri, str) else None)
        elif kind == "task-input" and isinstance(job_id := message.get("jobId"), str):
            self.server.tasks.look_for_answers(job_id)
        elif kind == "session" and isinstance(session_id := message.get("sessionId"), str):
            await self.sessions.refresh(session_id)
