"""A conformance check for server transports, in the spirit of trio's `check_two_way_stream`.

Every transport that carries MCP for a herald server must keep the same promises: replies
find their requests, a slow request does not hold up others, a cancelled request is never
answered, progress arrives in order before its result, and a second request in flight
with the same id is refused. `check_transport` checks these over a `WireSession`: raw
JSON-RPC to one client's session of `check_server()`, however the bytes travel. A
transport's own tests add what only it can show (EOF on stdio, a client leaving an SSE
stream on HTTP) and, where the server runs in the test's process, that no task is left.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Protocol

from herald.protocol.messages import JSONObject
from herald.server.app import Server
from herald.server.context import Context

#: How long the check waits for any one message before it calls the transport stuck.
WAIT_SECONDS = 10.0


class WireSession(Protocol):
    """One client's initialized session, as raw JSON-RPC messages in and out."""

    async def send(self, message: JSONObject) -> None:
        """Send one message to the server."""

    async def receive(self) -> JSONObject:
        """The next message from the server (a reply or a notification), in arrival order."""


def check_server() -> Server:
    """The server `check_transport` expects at the other end: echo, gates, progress."""
    server = Server("transport-check")
    gates: dict[str, asyncio.Event] = {}
    cancelled: list[str] = []

    def gate(name: str) -> asyncio.Event:
        return gates.setdefault(name, asyncio.Event())

    @server.tool
    def echo(text: str) -> str:
        """Answer the text at once."""
        return text

    @server.tool
    async def hold(name: str, ctx: Context) -> str:
        """Answer only once `release(name)` is called; a cancellation is recorded.

        It says it has started with a progress notification, so a check can wait for the
        server to hold it before sending what must come after it (over HTTP, separate
        POSTs have no order of their own).
        """
        await ctx.report_progress(0, message="holding")
        try:
            await gate(name).wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        return f"released {name}"

    @server.tool
    def release(name: str) -> str:
        """Let `hold(name)` answer."""
        gate(name).set()
        return f"releasing {name}"

    @server.tool
    def cancellations() -> dict[str, list[str]]:
        """The holds that were cancelled, oldest first."""
        return {"cancelled": list(cancelled)}

    @server.tool
    async def count(steps: int, ctx: Context) -> str:
        """Report progress `steps` times, then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"counted {steps}"

    return server


class _Inbox:
    """What the server sent, sorted as the check reads it: replies by id, notifications in order."""

    def __init__(self, session: WireSession) -> None:
        self.session = session
        self.replies: dict[Any, JSONObject] = {}
        self.notifications: list[JSONObject] = []

    async def _take(self) -> None:
        message = await asyncio.wait_for(self.session.receive(), WAIT_SECONDS)
        if "id" in message and "method" not in message:
            assert message["id"] not in self.replies, f"two replies to request {message['id']!r}"
            self.replies[message["id"]] = message
        else:
            self.notifications.append(message)

    async def reply_to(self, request_id: Any) -> JSONObject:
        while request_id not in self.replies:
            await self._take()
        return self.replies.pop(request_id)

    async def started(self, token: Any) -> None:
        """Wait for the first progress of the request with `token`: the server is running it."""
        while not any(
            item.get("method") == "notifications/progress" and item["params"]["progressToken"] == token
            for item in self.notifications
        ):
            await self._take()

    async def hold(self, request_id: int, name: str) -> None:
        await self.session.send(_call(request_id, "hold", {"name": name}, token=request_id))
        await self.started(request_id)


def _call(request_id: int, name: str, arguments: JSONObject, token: int | None = None) -> JSONObject:
    params: JSONObject = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _text(reply: JSONObject) -> str:
    assert "result" in reply, f"expected a result, got {reply}"
    text: str = reply["result"]["content"][0]["text"]
    return text


async def check_transport(session: WireSession, *, first_id: int = 1000) -> None:
    """Raise AssertionError at the first promise the transport breaks."""
    inbox = _Inbox(session)
    ids = itertools.count(first_id)

    # Replies find their requests, one at a time and many in flight.
    for number in range(5):
        request_id = next(ids)
        await session.send(_call(request_id, "echo", {"text": f"one {number}"}))
        assert _text(await inbox.reply_to(request_id)) == f"one {number}"
    pipelined = [next(ids) for _ in range(30)]
    for request_id in pipelined:
        await session.send(_call(request_id, "echo", {"text": f"many {request_id}"}))
    for request_id in reversed(pipelined):
        assert _text(await inbox.reply_to(request_id)) == f"many {request_id}"

    # A request that waits holds up nobody.
    held = next(ids)
    await inbox.hold(held, "slow")
    quick = next(ids)
    await session.send(_call(quick, "echo", {"text": "meanwhile"}))
    assert _text(await inbox.reply_to(quick)) == "meanwhile"
    assert held not in inbox.replies, "the held request answered before it was released"
    releaser = next(ids)
    await session.send(_call(releaser, "release", {"name": "slow"}))
    assert _text(await inbox.reply_to(held)) == "released slow"
    await inbox.reply_to(releaser)

    # A second request with the id of one in flight is refused; the first is untouched.
    busy = next(ids)
    await inbox.hold(busy, "busy")
    await session.send(_call(busy, "echo", {"text": "same id"}))
    refusal = await inbox.reply_to(busy)
    assert refusal.get("error", {}).get("code") == -32600, (
        f"a duplicate id in flight was not refused: {refusal}"
    )
    releaser = next(ids)
    await session.send(_call(releaser, "release", {"name": "busy"}))
    assert _text(await inbox.reply_to(busy)) == "released busy"
    await inbox.reply_to(releaser)

    # A cancelled request is stopped and never answered.
    doomed = next(ids)
    await inbox.hold(doomed, "doomed")
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": doomed}}
    await session.send(cancel)
    # Asked after the cancellation, in order: the hold has been stopped by the time this runs.
    asked = next(ids)
    await session.send(_call(asked, "cancellations", {}))
    stopped = (await inbox.reply_to(asked))["result"]["structuredContent"]["cancelled"]
    assert stopped == ["doomed"], f"the cancelled request was not stopped: {stopped}"
    assert doomed not in inbox.replies, "a cancelled request was answered"

    # Progress arrives in order, all of it before the result.
    counted = next(ids)
    inbox.notifications.clear()
    await session.send(_call(counted, "count", {"steps": 20}, token=counted))
    assert _text(await inbox.reply_to(counted)) == "counted 20"
    progress = [
        item["params"]["progress"]
        for item in inbox.notifications
        if item.get("method") == "notifications/progress" and item["params"]["progressToken"] == counted
    ]
    assert progress == list(range(1, 21)), f"progress out of order or lost: {progress}"
    assert doomed not in inbox.replies, "a cancelled request was answered late"
