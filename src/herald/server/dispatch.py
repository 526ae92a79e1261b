"""Serve one request in a scope: gate, validate, handle, shape the result.

The same steps run for both eras; the scope says which version's schema applies and
whether the 2026-07-28 result fields (`resultType`, cache hints, server info) are added.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcp_types import SERVER_INFO_META_KEY

from herald.protocol.errors import InternalError, MethodNotFound, ProtocolError, ResourceNotFound
from herald.protocol.messages import ErrorResponse, Request, Response
from herald.protocol.sealing import seal
from herald.protocol.validation import (
    is_cacheable,
    serialize_result,
    validate_request_params,
    without_unusable_answers,
)
from herald.server.handlers import HANDLERS, SELF_VALIDATED, Handler, state_purpose
from herald.server.inputs import InputRequired
from herald.server.middleware import Call, chain
from herald.server.scope import RequestScope

if TYPE_CHECKING:
    from herald.server.app import Server

logger = logging.getLogger("herald.server")


async def respond(server: Server, scope: RequestScope) -> Response | ErrorResponse:
    """The response to send for `scope.request`; never raises but for cancellation."""
    try:
        return Response(scope.request.id, await run(server, scope))
    except ProtocolError as exc:
        return error_reply(scope, exc)
    except Exception:
        logger.exception("internal error while serving %s", scope.request.method)
        return error_reply(scope, InternalError("Internal error"))


def error_reply(scope: RequestScope, error: ProtocolError) -> ErrorResponse:
    body = error.to_error_object()
    if isinstance(error, ResourceNotFound):
        body["code"] = error.code_for(scope.era)
    if error.__cause__ is not None and isinstance(error, InternalError):
        logger.error("%s", error.message, exc_info=error.__cause__)
    return ErrorResponse(scope.request.id, body)


async def run(server: Server, scope: RequestScope) -> dict[str, Any]:
    method = scope.request.method
    entry = HANDLERS.get(method)
    if entry is None:
        raise MethodNotFound(f"Method not found: {method}")
    handler, capability = entry
    if capability is not None and capability not in server.capabilities():
        raise MethodNotFound(f"Method not found: {method} (this server declares no {capability} capability)")
    if scope.era.modern and "inputResponses" in scope.params:
        cleaned = without_unusable_answers(scope.request.params)
        scope.request = Request(scope.request.id, method, dict(cleaned) if cleaned is not None else None)
    if method not in SELF_VALIDATED:
        validate_request_params(method, scope.version, scope.request.params)
    try:
        if server.middleware:
            result = await _through_middleware(server, scope, handler)
        else:
            result = await handler(server, scope)
    except InputRequired as needed:
        result = {
            "resultType": "input_required",
            "inputRequests": needed.requests,
            "requestState": seal(
                server.state_key,
                state_purpose(scope),
                {
                    "answers": needed.answers,
                    "state": needed.state,
                    "expires": server.clock() + server.request_state_ttl,
                },
            ),
        }
    if scope.era.modern:
        add_modern_fields(server, method, result)
    if result.get("resultType") == "task" or (method == "tools/call" and "task" in result):
        return result  # a created task: the shape of the tasks extension, which the wire types do not list
    serialized = serialize_result(method, scope.version, result)
    if method == "tools/list" and server.scopes.every_request is not None:
        add_security_schemes(server, serialized)
    return serialized


async def _through_middleware(server: Server, scope: RequestScope, handler: Handler) -> dict[str, Any]:
    """The handler's result, through the server's middleware (`herald.server.middleware`)."""
    call = Call(
        method=scope.request.method,
        params=scope.params,
        request_id=scope.request.id,
        era=scope.era,
        principal=scope.principal,
        owner=scope.owner,
        peer=scope.peer,
    )

    async def handle(_: Call) -> dict[str, Any]:
        return await handler(server, scope)

    return await chain(server.middleware, handle)(call)


def add_security_schemes(server: Server, result: dict[str, Any]) -> None:
    """Each tool's `securitySchemes` (ChatGPT's Apps SDK), where the server asks for tokens.

    Added after the result is shaped by the schema, which does not define the field: hosts
    read it beside the tool's name, and older ones in `_meta`.
    """
    for tool in result.get("tools", []):
        schemes = server.scopes.security_schemes(tool["name"])
        tool["securitySchemes"] = schemes
        tool["_meta"] = {**tool.get("_meta", {}), "securitySchemes": schemes}


def add_modern_fields(server: Server, method: str, result: dict[str, Any]) -> None:
    """What every 2026-07-28 result carries: its type, cache hints where defined, and who we are."""
    result.setdefault("resultType", "complete")
    if is_cacheable(method):
        result.setdefault("ttlMs", server.cache_ttl_ms)
        result.setdefault("cacheScope", server.cache_scope)
    meta = result.setdefault("_meta", {})
    meta.setdefault(SERVER_INFO_META_KEY, server.server_info())
