"""The few ASGI moves the endpoint makes, kept apart so each stays one line at the call site."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from herald.protocol.codec import Outgoing, encode
from herald.protocol.http import HTTPError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


#: Where the scope keeps an absolute-form request target's authority (`POST http://name/mcp`),
#: which uvicorn drops and `herald.transports.http.protocol` puts back for the Host check.
TARGET_AUTHORITY: Final = "herald.target_authority"
#: What `Retry-After` says when a cap turns a request away (503, 429): soon, not now.
RETRY_AFTER_SECONDS: Final = 1
#: The most of a JSON answer handed to the server at once (see `send_json`).
BODY_PIECE: Final = 1024 * 1024
#: Headers a request may carry once: two of them are two answers to one question, and a proxy
#: in front that reads the first would disagree with us reading the last.
SINGLE_HEADERS = frozenset({"host", "origin", "mcp-session-id", "mcp-protocol-version", "authorization"})


def request_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by name (lower-case, as ASGI servers give them), values trimmed
    of surrounding white space (RFC 9110 §5.5), as the rules in `herald.protocol` take them.
    `HTTPError` 400 for a header that must come once and came more often."""
    raw = scope["headers"]
    headers = {name.decode("latin-1"): value.decode("latin-1").strip(" \t") for name, value in raw}
    if len(headers) < len(raw):  # a name came twice: rare, so only then is it looked for
        seen: set[bytes] = set()
        for name, _ in raw:
            if name in seen and name.decode("latin-1") in SINGLE_HEADERS:
                raise HTTPError(
                    400, f"Bad Request: the {name.decode('latin-1')} header is sent more than once"
                )
            seen.add(name)
    return headers


async def read_body(receive: Receive, headers: dict[str, str], limit: int) -> bytes:
    """The whole request body, refused with 413 as soon as it is known to be too large."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPError(413, f"Payload Too Large: the body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise HTTPError(400, "Bad Request: the client went away before sending the body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"Payload Too Large: the body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def wait_for_disconnect(receive: Receive) -> None:
    """Returns when the client closes the connection (the request body is already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def send_json(
    send: Send, status: int, message: Outgoing, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = encode(message)
    headers = [*JSON_HEADERS, (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    # In pieces, each after the client took the last: one `send` of a job's 40 MB result
    # left all the socket could not take at once in the transport's buffer, a second copy.
    if len(body) <= BODY_PIECE:
        await send({"type": "http.response.body", "body": body})
        return
    for start in range(0, len(body), BODY_PIECE):
        end = start + BODY_PIECE
        await send({"type": "http.response.body", "body": body[start:end], "more_body": end < len(body)})


async def send_html(send: Send, body: bytes, extra: list[tuple[bytes, bytes]]) -> None:
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_empty(send: Send, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def start_stream(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})


async def send_body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def end_body(send: Send) -> None:
    await send({"type": "http.response.body", "body": b"", "more_body": False})
