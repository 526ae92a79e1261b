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

    stop_listening = subscription.open(lambda notification: frames.put_nowait(frame(notification)))
    disconnected = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await start_stream(send)
        await send_body(send, frame(subscription.acknowledgement()))
        while not disconnected.done():
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
        with contextlib.suppress(Exception):
            await end_body(send)
