"""The Streamable HTTP rules, as pure functions over header values.

The HTTP transport asks these questions and turns the answers into status codes; it
decides nothing of its own. Headers are given as a case-insensitive mapping (names
lower-cased), because HTTP field names are case-insensitive while their values are not.
"""

from __future__ import annotations

import base64
import binascii
import enum
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from herald.protocol.codec import Batch
from herald.protocol.errors import HeaderMismatch, ProtocolError
from herald.protocol.messages import Message, Notification, Request
from herald.protocol.modern import is_modern_request
from herald.protocol.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS, is_at_least

#: What a handshake-era request without `MCP-Protocol-Version` is taken to speak.
DEFAULT_HEADER_VERSION: Final = "2025-03-26"

#: Method -> the params field mirrored in the `Mcp-Name` header (2026-07-28).
NAME_FIELDS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

X_MCP_HEADER: Final = "x-mcp-header"

#: The HTTP status of a 2026-07-28 error reply, by JSON-RPC code; others are 200.
MODERN_ERROR_STATUS: Final[Mapping[int, int]] = {
    -32700: 400,
    -32600: 400,
    -32602: 400,
    -32020: 400,
    -32021: 400,
    -32022: 400,
    -32601: 404,
}
_BASE64_WRAPPED = re.compile(r"=\?base64\?(?P<payload>.*)\?=")


class HTTPError(ProtocolError):
    """A request refused before any JSON-RPC processing, with its HTTP status."""

    code = -32600

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


#: SEP-1699 priming events (an id and a `retry:` before any data) exist from this version on.
PRIMING_SINCE: Final = "2025-11-25"


def primes(session_version: str | None) -> bool:
    """Whether a session's SSE response opens with a priming event."""
    return is_at_least(session_version or "", PRIMING_SINCE)


def is_modern_exchange(headers: Mapping[str, str]) -> bool:
    """A message without a session that names a 2026-07-28 version in its header."""
    return "mcp-session-id" not in headers and headers.get("mcp-protocol-version") in MODERN_VERSIONS


class PostRoute(enum.Enum):
    """Where a POSTed message goes, decided before any session is looked up."""

    MODERN_REQUEST = "modern request"  #: served on its own, for this exchange
    MODERN_NOTIFICATION = "modern notification"  #: accepted with 202, belongs to no exchange
    INITIALIZE = "initialize"  #: mints a session
    SESSION = "session"  #: belongs to the session named by `Mcp-Session-Id`


def route_post(message: Message | Batch, headers: Mapping[str, str]) -> PostRoute:
    """A request is of the modern era when its `_meta` names a version; a notification also by its header.

    2026-07-28 has no sessions: a notification (a client closing its subscription sends
    `notifications/cancelled`) belongs to no exchange and is accepted as it is.
    """
    if isinstance(message, Request) and is_modern_request(message.method, message.params):
        return PostRoute.MODERN_REQUEST
    if "mcp-session-id" not in headers:
        if isinstance(message, Request) and message.method == "initialize":
            return PostRoute.INITIALIZE
        if isinstance(message, Notification) and (
            is_modern_request(message.method, message.params) or is_modern_exchange(headers)
        ):
            return PostRoute.MODERN_NOTIFICATION
    return PostRoute.SESSION


def check_get(headers: Mapping[str, str]) -> None:
    """GET opens a session's event stream: meaningless without sessions, useless without SSE."""
    if is_modern_exchange(headers):
        raise HTTPError(405, "Method Not Allowed: GET has no meaning in protocol version 2026-07-28")
    if not accepts(headers, "text/event-stream"):
        raise HTTPError(406, "Not Acceptable: GET opens an event stream; accept text/event-stream")


def check_delete(headers: Mapping[str, str]) -> None:
    """DELETE ends a session, and 2026-07-28 has none."""
    if is_modern_exchange(headers):
        raise HTTPError(405, "Method Not Allowed: there are no sessions in protocol version 2026-07-28")


def require_session_id(headers: Mapping[str, str]) -> str:
    session_id = headers.get("mcp-session-id")
    if session_id is None:
        raise HTTPError(400, "Bad Request: the Mcp-Session-Id header is required after initialize")
    return session_id


def accepts(headers: Mapping[str, str], media_type: str) -> bool:
    accept = headers.get("accept", "")
    kinds = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    major = media_type.split("/", 1)[0]
    return bool(kinds & {media_type, f"{major}/*", "*/*"})


def check_post_headers(headers: Mapping[str, str]) -> None:
    """A POST must accept both JSON and SSE, and send JSON."""
    if not (accepts(headers, "application/json") and accepts(headers, "text/event-stream")):
        raise HTTPError(
            406, "Not Acceptable: the Accept header must list application/json and text/event-stream"
        )
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json":
        raise HTTPError(
            415, f"Unsupported Media Type: send application/json, not {content_type or 'nothing'!r}"
        )


def handshake_header_version(headers: Mapping[str, str]) -> str:
    """The version a handshake-era request declares in `MCP-Protocol-Version`."""
    version = headers.get("mcp-protocol-version")
    if version is None:
        return DEFAULT_HEADER_VERSION
    if version not in HANDSHAKE_VERSIONS and version not in MODERN_VERSIONS:
        supported = ", ".join((*HANDSHAKE_VERSIONS, *MODERN_VERSIONS))
        raise HTTPError(
            400, f"Bad Request: unsupported MCP-Protocol-Version {version!r}; supported: {supported}"
        )
    return version


def check_modern_headers(
    headers: Mapping[str, str], method: str, params: Mapping[str, Any], version: object, tool_schema: Any
) -> None:
    """2026-07-28: the headers must mirror the body exactly (SEP-2243)."""
    header_version = headers.get("mcp-protocol-version")
    if header_version != version:
        raise HeaderMismatch(
            f"Header mismatch: MCP-Protocol-Version is {header_version!r} but the request says {version!r}"
        )
    header_method = headers.get("mcp-method")
    if header_method != method:
        raise HeaderMismatch(
            f"Header mismatch: Mcp-Method is {header_method!r} but the body's method is {method!r}"
        )
    field = NAME_FIELDS.get(method)
    if field is not None:
        header_name = headers.get("mcp-name")
        expected = params.get(field)
        if header_name is None or header_name.strip() != expected:
            raise HeaderMismatch(
                f"Header mismatch: Mcp-Name is {header_name!r} but params.{field} is {expected!r}"
            )
    if method == "tools/call" and isinstance(tool_schema, dict):
        arguments = params.get("arguments") or {}
        for name, token in header_parameters(tool_schema):
            if name not in arguments:
                continue
            sent = decode_header_value(headers.get(f"mcp-param-{token.lower()}"))
            if sent is None or sent != _as_header_text(arguments[name]):
                raise HeaderMismatch(
                    f"Header mismatch: Mcp-Param-{token} does not carry the value of argument {name!r}"
                )


def header_parameters(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(argument, header suffix) for every top-level property annotated with `x-mcp-header`."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            token = spec.get(X_MCP_HEADER) if isinstance(spec, dict) else None
            if isinstance(token, str) and token:
                yield name, token


def decode_header_value(value: str | None) -> str | None:
    """A header value, unwrapped from `=?base64?…?=` when it is wrapped; None if the wrapping is broken."""
    if value is None:
        return None
    value = value.strip()
    wrapped = _BASE64_WRAPPED.fullmatch(value)
    if wrapped is None:
        return value
    payload = wrapped.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None  # not canonical: corrupted in transit
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _as_header_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
