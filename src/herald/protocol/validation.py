"""Check params and results against the official wire types for the version in force.

The official surface maps (`mcp_types.methods`, mirrored era by era in
`herald.protocol.wire_types` so that an era's models are built only when first needed)
are the version gate (a method absent for a version does not exist there) and the shape
check. Pydantic's errors are rewritten into one sentence
a person can act on; when a required field is missing and the params hold a field with
a familiar wrong name (`tool` for `name`, `resourceId` for `uri`) the message says so.

Values the wire types leave open (tool arguments) get one more check, for how deeply
they nest: see `nested_deeper_than`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from functools import cache
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from herald.protocol.errors import InternalError, InvalidParams, MethodNotFound
from herald.protocol.wire_types import adapter, wire_type

#: Wrong names people (and models) commonly use, mapped to the spec's field names.
FAMILIAR_MISTAKES: Final[Mapping[str, str]] = {
    "tool": "name",
    "toolName": "name",
    "tool_name": "name",
    "args": "arguments",
    "arg": "arguments",
    "params": "arguments",
    "input": "arguments",
    "parameters": "arguments",
    "resourceId": "uri",
    "resource_id": "uri",
    "resource": "uri",
    "url": "uri",
    "prompt": "name",
    "promptName": "name",
    "version": "protocolVersion",
    "protocol_version": "protocolVersion",
    "clientinfo": "clientInfo",
    "client_info": "clientInfo",
}


#: How deeply a value the schema leaves open (tool arguments) may nest. Our JSON libraries
#: stop near 255 levels (orjson when it encodes, jsonschema-rs when it converts a value),
#: so anything allowed in must stay well below that, results and stored records included.
MAX_JSON_DEPTH: Final = 64


def nested_deeper_than(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `value` has objects or arrays nested more than `limit` levels (it counts as 1).

    Iterative on purpose: the point is to refuse what would overflow recursive code, so
    this must not recurse itself.
    """
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def validate_request_params(method: str, version: str, params: Mapping[str, Any] | None) -> None:
    """Raise `MethodNotFound` or `InvalidParams` unless `params` fit `method` at `version`.

    The wire models are whole frames, so the params are checked inside a stub envelope,
    as `mcp_types.methods.validate_client_request` does.
    """
    try:
        model = wire_type("request", method, version)
    except KeyError:
        raise MethodNotFound(f"Method not found: {method} (protocol version {version})") from None
    try:
        model.model_validate(_frame(method, params, {"jsonrpc": "2.0", "id": 0}), by_name=False)
    except ValidationError as exc:
        raise InvalidParams(describe(method, params, exc)) from None


def _frame(method: str, params: Mapping[str, Any] | None, envelope: dict[str, Any]) -> dict[str, Any]:
    envelope["method"] = method
    if params is not None:
        envelope["params"] = params
    return envelope


def without_unusable_answers(params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Drop `inputResponses` entries that fit no answer type (2026-07-28 retries).

    An answer the server cannot use is treated as not given, so the server asks for it
    again instead of failing the whole retry; unknown keys the client adds are ignored
    the same way, as the spec asks.
    """
    responses = params.get("inputResponses") if params else None
    if not isinstance(responses, dict) or params is None:
        return params
    usable = {key: value for key, value in responses.items() if _is_answer(value)}
    if len(usable) == len(responses):
        return params
    return {**params, "inputResponses": usable}


def _is_answer(value: object) -> bool:
    try:
        _answer_adapter().validate_python(value, by_name=False)
    except ValidationError:
        return False
    return True


@cache
def _answer_adapter() -> TypeAdapter[Any]:
    """Built on the first 2026-07-28 retry: no other exchange carries answers."""
    from mcp_types import InputResponse

    return TypeAdapter(InputResponse)


def validate_notification_params(method: str, version: str, params: Mapping[str, Any] | None) -> bool:
    """Whether a client notification is one this version knows, with valid params."""
    try:
        wire_type("notification", method, version).model_validate(
            _frame(method, params, {"jsonrpc": "2.0"}), by_name=False
        )
    except (KeyError, ValidationError):
        return False
    return True


def serialize_result(method: str, version: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a result we are about to send and return its wire shape.

    The shape is the schema's, as `mcp_types.methods.serialize_server_result` gives it:
    fields the version does not define are dropped. A result that does not fit the
    schema is our bug: it becomes an internal error and the detail goes to the log
    through the exception chain.
    """
    try:
        shape = adapter(wire_type("result", method, version))
    except KeyError:
        return dict(result)
    try:
        dumped: dict[str, Any] = shape.dump_python(
            shape.validate_python(result, by_name=False), by_alias=True, mode="json", exclude_none=True
        )
    except ValidationError as exc:
        raise InternalError(f"Internal error: the {method} result did not match the schema") from exc
    return dumped


def is_cacheable(method: str) -> bool:
    """Whether `method`'s 2026-07-28 result carries cache hints (`ttlMs`, `cacheScope`).

    Asked only of modern results, so importing `mcp_types.methods` here costs nothing a
    modern exchange would not pay anyway.
    """
    from mcp_types.methods import CACHEABLE_METHODS

    return method in CACHEABLE_METHODS


def describe(method: str, params: Mapping[str, Any] | None, error: ValidationError) -> str:
    """One readable sentence for a pydantic validation error of request params."""
    given = set(params or {})
    problems: list[str] = []
    for detail in error.errors(include_url=False):
        location = [str(part) for part in detail["loc"] if part != "params"]
        field = ".".join(location) or "params"
        if detail["type"] == "missing":
            problems.append(_missing(field, location, given))
        else:
            problems.append(f"'{field}': {detail['msg']}")
    return f"Invalid params for {method}: " + "; ".join(dict.fromkeys(problems))


def _missing(field: str, location: list[str], given: set[str]) -> str:
    message = f"missing required field '{field}'"
    if len(location) != 1:
        return message
    wrong = [name for name in given if FAMILIAR_MISTAKES.get(name) == location[0]]
    wrong = wrong or difflib.get_close_matches(location[0], sorted(given), n=1, cutoff=0.7)
    if wrong:
        message += f" (got '{wrong[0]}'; the field is called '{location[0]}')"
    return message
