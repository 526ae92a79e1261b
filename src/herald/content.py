"""Builders for MCP content blocks and the result types user functions may return."""

from __future__ import annotations

import base64
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_jsonable_python

Role = Literal["user", "assistant"]


def text(value: str, *, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if annotations is not None:
        block["annotations"] = annotations
    return block


def image(data: bytes, mime_type: str) -> dict[str, Any]:
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def audio(data: bytes, mime_type: str) -> dict[str, Any]:
    return {"type": "audio", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def resource_link(uri: str, name: str, *, mime_type: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": name}
    if mime_type is not None:
        block["mimeType"] = mime_type
    return block


def embedded_resource(
    uri: str, *, text: str | None = None, blob: bytes | None = None, mime_type: str
) -> dict[str, Any]:
    contents: dict[str, Any] = {"uri": uri, "mimeType": mime_type}
    if blob is not None:
        contents["blob"] = base64.b64encode(blob).decode("ascii")
    else:
        contents["text"] = text or ""
    return {"type": "resource", "resource": contents}


def message(role: Role, content: str | dict[str, Any]) -> dict[str, Any]:
    """A prompt message; a plain string becomes a text block."""
    return {"role": role, "content": text(content) if isinstance(content, str) else content}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A full tool result, for tools that need more than a return value gives."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class PromptResult:
    """Rendered prompt messages with an optional description."""

    messages: list[dict[str, Any]]
    description: str | None = None
    meta: dict[str, Any] | None = None


def to_json_value(value: Any) -> Any:
    """Plain JSON data from a pydantic model or dataclass, or a list or dict that holds some
    (`list[Gift]`); other values pass through."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_none=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list | tuple | dict):
        return to_jsonable_python(value, by_alias=True, exclude_none=True)
    return value
