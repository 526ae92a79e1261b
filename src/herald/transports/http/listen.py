"""`subscriptions/listen` over HTTP: an SSE stream that lives until the client closes it."""

from __future__ import annotations

import asyncio
import contextlib

from herald.protocol.codec import encode
from herald.protocol.messages import Notification
from herald.protocol.sse import encode_comment, encode_event
from herald.server.app import Server
from herald.server.scope import RequestScope
from herald.server.subscriptions import Subscription
from herald.transports.http.asgi import Receive, Send, end_body, send_body, start_stream, wait_for_disconnect
from herald.transports.http.streams import MAX_UNREAD_FRAMES


async def serve_listen(
    server: Server,
    scope: RequestScope,
    receive: Receive,
    send: Send,
    keepalive: float,
) -> None:
    subscription = Subscription(server, scope.request.id, scope.params.get("notifications") or {})
    frames: asyncio.Queue[bytes] = asyncio.Queue()

    def frame(notification: Notification) -> bytes:
        return encode_event(encode(notification))

    fell_behind = asyncio.Event()

    def deliver(notification: Notification) -> None:
        # A client that stops reading must not grow the server's memory: past the bound its
        # stream ends; it listens again and catches up on job events with a get_job_status cursor.
        if frames.qsize() >= MAX_UNREAD_FRAMES:
            fell_behind.set()
        elif not fell_behind.is_set():
            frames.put_nowait(frame(notification))

    stop_listening = subscription.open(deliver)
    disconnected = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await start_stream(send)
        await send_body(send, frame(subscription.acknowledgement()))
        while not disconnected.done() and not (fell_behind.is_set() and frames.empty()):
            getter = asyncio.ensure_future(frames.get())
            done, _ = await asyncio.wait(
                {getter, disconnected}, timeout=keepalive, return_when=asyncio.FIRST_COMPLETED
            )
            if getter in done:
                await send_body(send, getter.result())
                continue
            getter.cancel()
            if not done:
                await send_body(send, encode_comment("keep-alive"))
    finally:
        stop_listening()
        disconnected.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await disconnected
        with contextlib.suppress(Exception):
            await end_body(send)
