"""Turn what user functions return into MCP result objects.

Tool authors return what is natural (a string, a dict, a model, content blocks, or a
`ToolResult`); this module gives each a single stable wire shape.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from herald.content import PromptResult, ToolResult, message, text, to_json_value


def tool_result(value: Any, *, wrapped: bool = False, json_ready: bool = False) -> ToolResult:
    """The result of a tool that returned `value`.

    The text content stands on its own (a string as it is, anything else as JSON); an
    object is also the structured content, and so is any other value when its tool
    declares it `wrapped` under `"result"` (see `herald.server.signature.OutputShape`).
    `json_ready`: `value` is JSON data already (its shape serialized it), not walked again.
    """
    if isinstance(value, ToolResult):
        return value
    if value is None and not wrapped:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult([text(value)], structured={"result": value} if wrapped else None)
    if _is_content_list(value) and not wrapped:
        return ToolResult(list(value))
    data = value if json_ready else to_json_value(value)
    content = [text(orjson.dumps(data).decode())]
    if wrapped:
        return ToolResult(content, structured={"result": data})
    return ToolResult(content, structured=data if isinstance(data, dict) else None)


def unwrapped(wire: dict[str, Any]) -> dict[str, Any]:
    """A wrapped result as 2026-07-28 sends it: the value itself as the structured content."""
    structured = wire.get("structuredContent")
    if isinstance(structured, dict) and "result" in structured:
        return {**wire, "structuredContent": structured["result"]}
    return wire


def tool_result_to_wire(result: ToolResult) -> dict[str, Any]:
    wire: dict[str, Any] = {"content": result.content}
    if result.structured is not None:
        wire["structuredContent"] = result.structured
    if result.is_error:
        wire["isError"] = True
    if result.meta is not None:
        wire["_meta"] = result.meta
    return wire


def error_result(text_value: str) -> dict[str, Any]:
    """A tool execution error: a valid result the model can read and act on."""
    return {"content": [text(text_value)], "isError": True}


def resource_contents(uri: str, mime_type: str | None, value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list) and all(isinstance(item, dict) and "uri" in item for item in value):
        return value
    entry: dict[str, Any] = {"uri": uri}
    if isinstance(value, bytes):
        entry["mimeType"] = mime_type or "application/octet-stream"
        entry["blob"] = base64.b64encode(value).decode("ascii")
        return [entry]
    if isinstance(value, str):
        entry["mimeType"] = mime_type or "text/plain"
        entry["text"] = value
        return [entry]
    entry["mimeType"] = mime_type or "application/json"
    entry["text"] = orjson.dumps(to_json_value(value)).decode()
    return [entry]


def prompt_result(value: Any) -> dict[str, Any]:
    if isinstance(value, PromptResult):
        wire: dict[str, Any] = {"messages": value.messages}
        if value.description is not None:
            wire["description"] = value.description
        if value.meta is not None:
            wire["_meta"] = value.meta
        return wire
    if isinstance(value, str):
        return {"messages": [message("user", value)]}
    messages = [message("user", item) if isinstance(item, str) else item for item in value]
    return {"messages": messages}


def _is_content_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) and "type" in item for item in value)
