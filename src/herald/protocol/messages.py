"""The four JSON-RPC 2.0 message kinds as plain immutable values.

Ids keep their JSON type: `1` and `"1"` are different requests. Params stay as the
decoded JSON object; method-level validation happens later, against the official
wire types for the protocol version in force (`herald.protocol.validation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RequestId = int | str
JSONObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Request:
    """A message that expects exactly one response with the same id."""

    id: RequestId
    method: str
    params: JSONObject | None = None

    def to_json(self) -> JSONObject:
        message: JSONObject = {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        if self.params is not None:
            message["params"] = self.params
        return message


@dataclass(frozen=True, slots=True)
class Notification:
    """A message with no id. It is never answered, not even with an error."""

    method: str
    params: JSONObject | None = None

    def to_json(self) -> JSONObject:
        message: JSONObject = {"jsonrpc": "2.0", "method": self.method}
        if self.params is not None:
            message["params"] = self.params
        return message


@dataclass(frozen=True, slots=True)
class Response:
    """A successful answer to the request with the same id."""

    id: RequestId
    result: JSONObject

    def to_json(self) -> JSONObject:
        return {"jsonrpc": "2.0", "id": self.id, "result": self.result}


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A failed answer. `id` is None only when the request's id could not be read."""

    id: RequestId | None
    error: JSONObject

    @property
    def code(self) -> int:
        code: int = self.error["code"]
        return code

    def to_json(self) -> JSONObject:
        return {"jsonrpc": "2.0", "id": self.id, "error": self.error}


Message = Request | Notification | Response | ErrorResponse
