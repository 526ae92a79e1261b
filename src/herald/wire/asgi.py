"""Recording the HTTP traffic of any ASGI app: what `herald record --upstream` and
`--message-log` put in front of an MCP endpoint.

The middleware watches the request body and the response as they pass, and changes
neither: every chunk goes on the moment it arrives, so an event stream stays a stream.
Each exchange gets a name (`post-7`, `get-3`), which ties a request to what answered it
when no session id can (an `initialize`, whose session the response mints, or a
2026-07-28 request, which has none). Per exchange it writes:

- the client's side once its body is complete: a `message` record with the request
  line and headers, or an `http` record for a bodyless GET or DELETE (and for a body
  the app never read, so a refusal before reading still shows its request);
- the server's side: a JSON answer as one `message` record with the status and
  headers; an event stream as an `http` record when it opens, a `message` record per
  event (with its id), and an `end` record when it closes or the client leaves; any
  other answer (a 202, an error page) as an `http` record with the start of its body.

What passes is never held whole: of a body or an event, at most `MESSAGE_KEEP_BYTES`
is kept, and one that is longer is logged as its start and its size (an `unparsed`
record). An event is read as bytes, so one that is not UTF-8 is kept as it came and
the events after it are read as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from herald.protocol.peek import HEAD_BYTES
from herald.protocol.sse import OversizeEvent, RawEventDecoder
from herald.wire.format import MESSAGE_KEEP_BYTES, Sender
from herald.wire.writer import MessageLog, header_map

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Of an answer that is neither JSON nor an event stream, this much is kept.
OTHER_KEEP_BYTES: Final = 2048


def request_target(scope: Scope) -> str:
    """The request's path and query as the client sent them (undecoded)."""
    path: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope.get("query_string", b"")
    return path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")


class RecordingMiddleware:
    """Wraps an ASGI app; every HTTP exchange it serves is written to `log`."""

    def __init__(self, app: ASGIApp, log: MessageLog) -> None:
        self.app = app
        self.log = log
        self._numbers = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(self.log, scope, next(self._numbers))
        try:
            await self.app(scope, exchange.receive(receive), exchange.send(send))
        finally:
            exchange.finish()


class _Kept:
    """A body as it passes: whole while it is within `limit` bytes; past that, only its start."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.size = 0
        self._head = min(limit, HEAD_BYTES)

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size <= self.limit:
            self.data += chunk
        elif len(self.data) > self._head:
            del self.data[self._head :]
        else:
            self.data += chunk[: self._head - len(self.data)]

    @property
    def whole(self) -> bool:
        return self.size <= self.limit


class _Exchange:
    """One request and its response, as the log sees them."""

    def __init__(self, log: MessageLog, scope: Scope, number: int) -> None:
        self.log = log
        method = str(scope["method"])
        self.stream = f"{method.lower()}-{number}"
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        self.session: str | None = headers.get("mcp-session-id")
        self.request = {"method": method, "path": request_target(scope), "headers": header_map(headers)}
        self.body = _Kept(MESSAGE_KEEP_BYTES)
        self.request_logged = False
        self.response: dict[str, Any] | None = None
        self.events: RawEventDecoder | None = None
        self.json = False
        self.answer = _Kept(OTHER_KEEP_BYTES)
        self.ended = False
        self.client_left = False

    # -- the client's side ---------------------------------------------------------------------

    def receive(self, receive: Receive) -> Receive:
        async def recorded() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.body.add(message.get("body", b""))
                if not message.get("more_body", False):
                    self._log_request()
            elif message["type"] == "http.disconnect":
                self.client_left = True
            return message

        return recorded

    def _log_request(self) -> None:
        if self.request_logged:
            return
        self.request_logged = True
        if self.body.size:
            self._log_kept("client", self.body, self.request)
        else:
            self.log.http("client", session=self.session, stream=self.stream, http=self.request)
        self.body = _Kept(0)  # logged: nothing of it need stay

    # -- the server's side ---------------------------------------------------------------------

    def send(self, send: Send) -> Send:
        async def recorded(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._start(message)
            elif message["type"] == "http.response.body":
                self._body(message.get("body", b""), more=bool(message.get("more_body", False)))
            await send(message)

        return recorded

    def _start(self, message: Message) -> None:
        self._log_request()  # a refusal before the body was read still shows its request
        headers = {
            bytes(name).decode("latin-1").lower(): bytes(value).decode("latin-1")
            for name, value in message.get("headers", [])
        }
        self.session = headers.get("mcp-session-id", self.session)
        self.response = {"status": int(message["status"]), "headers": header_map(headers)}
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type == "text/event-stream":
            self.events = RawEventDecoder(MESSAGE_KEEP_BYTES)
            self.log.http("server", session=self.session, stream=self.stream, http=self.response)
        self.json = content_type.endswith("json")
        if self.json:
            self.answer = _Kept(MESSAGE_KEEP_BYTES)

    def _body(self, chunk: bytes, *, more: bool) -> None:
        if self.events is not None:
            self._events(chunk)
            if not more:
                self._end("closed")
            return
        self.answer.add(chunk)
        if not more:
            self._log_answer()

    def _events(self, chunk: bytes) -> None:
        assert self.events is not None
        where: dict[str, Any] = {"session": self.session, "stream": self.stream}
        for event in self.events.feed(chunk):
            event_id = event.id.decode("utf-8", errors="replace") if event.id is not None else None
            if isinstance(event, OversizeEvent):
                self.log.oversize(
                    "server", "http", event.head, event.size, MESSAGE_KEEP_BYTES, event_id=event_id, **where
                )
            elif event.data:  # a priming event carries an id to resume from, and no message
                self.log.message("server", "http", event.data, event_id=event_id, **where)

    def _log_answer(self) -> None:
        assert self.response is not None
        self.ended = True
        if self.json and self.answer.size:
            self._log_kept("server", self.answer, self.response)
            return
        http = dict(self.response)
        if self.answer.size:
            http["body"] = self.answer.data[:OTHER_KEEP_BYTES].decode("utf-8", errors="replace")
        self.log.http("server", session=self.session, stream=self.stream, http=http)

    def _log_kept(self, sender: Sender, body: _Kept, http: dict[str, Any]) -> None:
        """A body as a message, or, if it was too long to keep, as its start and its size."""
        where: dict[str, Any] = {"session": self.session, "stream": self.stream, "http": http}
        if body.whole:
            self.log.message(sender, "http", bytes(body.data), **where)
        else:
            self.log.oversize(sender, "http", bytes(body.data), body.size, body.limit, **where)

    def _end(self, reason: str) -> None:
        if not self.ended:
            self.ended = True
            self.log.end("server", "http", reason, session=self.session, stream=self.stream)

    def finish(self) -> None:
        """The app returned (or raised): say how a stream it left open ended."""
        if self.events is not None:
            self._end("client left" if self.client_left else "cut short")
        elif self.response is not None and not self.ended:
            self._log_answer()
        elif self.response is None:
            self._log_request()
