"""What a connection receives and sends, as the MCP conventions name it in spans and metrics.

`herald.telemetry` holds the instruments; this module knows the protocol: which message
is a request, a notification or a batch, what a method's target is (the tool, the prompt,
the resource), how a reply says it failed. `Connection` calls it only while telemetry is
on (`herald.telemetry.active`), so none of this runs otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from herald.protocol.codec import Batch
from herald.protocol.connection import Answered, BatchReceived, Event, RequestReceived
from herald.protocol.errors import InvalidParams
from herald.protocol.messages import ErrorResponse, Message, Notification, Request, RequestId, Response
from herald.server.handlers import HANDLERS
from herald.telemetry import names

if TYPE_CHECKING:
    from herald.server.app import Server
    from herald.telemetry.instruments import Operation, Telemetry

__all__ = ["Traced", "client_attributes", "end_reply", "received"]

#: The methods whose params name a resource (`mcp.resource.uri`).
_RESOURCE_METHODS = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"}
)

#: Methods named as they are; any other a client sends is `_OTHER`, so that a client making
#: names up cannot grow the metrics without bound (the conventions' fallback value).
KNOWN_METHODS = frozenset(
    {
        *HANDLERS,
        "initialize",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
    }
)


class Traced(Protocol):
    """What a connection tells the spans about itself."""

    server: Server
    traced: dict[RequestId, Operation]
    session_id: str | None
    transport: str
    peer: str | None

    @property
    def protocol_version(self) -> str | None: ...


def _attributes(
    connection: Traced, method: str, params: Mapping[str, Any] | None, version: str | None
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The span's name, its attributes, and the subset its duration is recorded under.

    A tool or prompt the server does not have is named `_OTHER` too, for the same reason
    as a method (`KNOWN_METHODS`).
    """
    if method not in KNOWN_METHODS:
        method = names.OTHER
    measured: dict[str, Any] = {names.METHOD: method, names.TRANSPORT: connection.transport}
    if connection.transport == "tcp":
        measured[names.NETWORK_PROTOCOL] = "http"
    if version is not None:
        measured[names.PROTOCOL_VERSION] = version
    target = params.get("name") if params is not None else None
    if isinstance(target, str):
        registry = connection.server.registry
        if (method == "tools/call" and target not in registry.tools) or (
            method == "prompts/get" and target not in registry.prompts
        ):
            target = names.OTHER
        measured |= names.target_attributes(method, target)
    name = names.span_name(method, measured)
    attributes = dict(measured)
    if method in _RESOURCE_METHODS and params is not None and isinstance(params.get("uri"), str):
        attributes[names.RESOURCE_URI] = params["uri"]
    if connection.session_id is not None:
        attributes[names.SESSION_ID] = connection.session_id
    if connection.peer is not None:
        attributes[names.CLIENT_ADDRESS] = connection.peer
    return name, attributes, measured


def _start(
    telemetry: Telemetry,
    connection: Traced,
    message: Request | Notification,
    version: str | None,
    headers: Mapping[str, str] | None,
) -> Operation:
    name, attributes, measured = _attributes(connection, message.method, message.params, version)
    if isinstance(message, Request):
        attributes[names.REQUEST_ID] = str(message.id)
    return telemetry.start_server(name, attributes, measured, message.params, headers)


def received(
    telemetry: Telemetry,
    connection: Traced,
    message: Message | Batch,
    event: Event,
    headers: Mapping[str, str] | None,
) -> None:
    """Start the spans of what `message` brought: a request the connection serves is kept in
    `connection.traced` until its reply (`end_reply`); the rest end now."""
    if isinstance(message, Batch):
        if isinstance(event, BatchReceived):
            for item, inner in zip(message.items, event.events, strict=False):
                received(telemetry, connection, item, inner, headers)
        return
    if isinstance(message, Request):
        version = event.version if isinstance(event, RequestReceived) else connection.protocol_version
        operation = _start(telemetry, connection, message, version, headers)
        if isinstance(event, RequestReceived):
            connection.traced[message.id] = operation
        elif isinstance(event, Answered):
            reply = event.reply
            if message.method == "initialize" and isinstance(reply, Response):
                negotiated = reply.result.get("protocolVersion")
                if isinstance(negotiated, str):
                    operation.span.set_attribute(names.PROTOCOL_VERSION, negotiated)
                    operation.measured[names.PROTOCOL_VERSION] = negotiated
            end_reply(telemetry, operation, message.method, reply)
        else:
            telemetry.end_server(operation)
    elif isinstance(message, Notification):
        telemetry.end_server(_start(telemetry, connection, message, connection.protocol_version, headers))


def end_reply(
    telemetry: Telemetry, operation: Operation, method: str, reply: Response | ErrorResponse | None
) -> None:
    """End a request's span with how its reply says it went (None: cancelled, no reply)."""
    if reply is None:
        telemetry.end_server(operation, names.CANCELLED)
    elif isinstance(reply, ErrorResponse):
        code = reply.error.get("code")
        # The message of invalid params quotes the values sent, which may be secrets.
        message = "Invalid params" if code == InvalidParams.code else str(reply.error.get("message", ""))
        telemetry.end_server(operation, str(code), code, message)
    elif method == "tools/call" and reply.result.get("isError") is True:
        # Not the tool's text: it is written for a model, and may quote what it was given.
        telemetry.end_server(operation, names.TOOL_ERROR)
    else:
        telemetry.end_server(operation)


def client_attributes(connection: Traced, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The attributes of a CLIENT span for a request the server sends its client."""
    _, attributes, _ = _attributes(connection, method, params, connection.protocol_version)
    attributes.pop(names.CLIENT_ADDRESS, None)
    return attributes
