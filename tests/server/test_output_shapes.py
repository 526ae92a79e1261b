"""Any JSON return annotation gives an outputSchema; values that are not objects are wrapped.

The handshake era wants an object as `structuredContent`, so there a value of another type
goes under "result" (as the official SDK and FastMCP do); 2026-07-28 allows any JSON value
and any schema, so there it goes as it is. The text content always stands on its own.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import jsonschema_rs
import pytest
from pydantic import BaseModel

from herald import Server, ToolResult
from herald.content import text
from herald.testing import connect


class Gift(BaseModel):
    name: str
    price: float


class Note(BaseModel):
    text: str
    due: date | None


def build() -> Server:
    server = Server("shapes")

    @server.tool
    async def counts() -> dict[str, int]:
        return {"a": 1}

    @server.tool
    def total(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def gifts() -> list[Gift]:
        return [Gift(name="mug", price=9.5)]

    @server.tool
    async def greeting(name: str) -> str:
        return f"hello {name}"

    @server.tool
    async def maybe() -> int | None:
        return None

    @server.tool
    async def liar() -> int:
        return "not a number"  # type: ignore[return-value]

    @server.tool
    async def own_result() -> ToolResult:
        return ToolResult([text("as written")])

    @server.tool
    async def blocks() -> list[dict[str, Any]]:
        return [text("a content block")]

    @server.tool
    async def today() -> date:
        return date(2026, 12, 3)

    @server.tool
    async def notes() -> list[Note]:
        return [Note(text="undated", due=None), Note(text="dated", due=date(2027, 1, 1))]

    return server


async def listed(modern: bool) -> dict[str, dict[str, Any]]:
    async with connect(build(), modern=modern) as client:
        return {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}


async def test_handshake_schemas_are_objects_and_wrap_other_types() -> None:
    tools = await listed(modern=False)
    assert tools["counts"]["outputSchema"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert tools["total"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    gifts = tools["gifts"]["outputSchema"]
    assert gifts["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Gift"}}
    assert gifts["$defs"]["Gift"]["required"] == ["name", "price"], "the model's definition stays reachable"
    assert tools["greeting"]["outputSchema"]["properties"]["result"] == {"type": "string"}
    for undescribed in ("own_result", "blocks"):
        assert "outputSchema" not in tools[undescribed], f"{undescribed} shapes its own result"


async def test_modern_schemas_describe_the_value_itself() -> None:
    tools = await listed(modern=True)
    assert tools["total"]["outputSchema"] == {"type": "integer"}
    assert tools["gifts"]["outputSchema"]["items"] == {"$ref": "#/$defs/Gift"}
    assert "Gift" in tools["gifts"]["outputSchema"]["$defs"]
    assert tools["counts"]["outputSchema"]["type"] == "object"


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
@pytest.mark.parametrize(
    ("tool", "arguments", "value", "words"),
    [
        ("total", {"a": 2, "b": 3}, 5, "5"),
        ("gifts", {}, [{"name": "mug", "price": 9.5}], '[{"name":"mug","price":9.5}]'),
        ("greeting", {"name": "Ada"}, "hello Ada", "hello Ada"),
        ("maybe", {}, None, "null"),
    ],
)
async def test_structured_content_matches_the_listed_schema(
    modern: bool, tool: str, arguments: dict[str, Any], value: Any, words: str
) -> None:
    async with connect(build(), modern=modern) as client:
        schema = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}[tool]["outputSchema"]
        result = await client.call_tool(tool, arguments)
    assert result.get("isError") is not True
    if modern and value is None:  # JSON null is no structuredContent at all
        assert "structuredContent" not in result
    else:
        assert result["structuredContent"] == (value if modern else {"result": value})
        assert jsonschema_rs.validator_for(schema).is_valid(result["structuredContent"])
    assert result["content"] == [{"type": "text", "text": words}], "the text stands on its own"


async def test_an_object_result_is_not_wrapped() -> None:
    async with connect(build()) as client:
        result = await client.call_tool("counts")
    assert result["structuredContent"] == {"a": 1}


async def test_a_value_outside_the_annotation_is_a_tool_error() -> None:
    async with connect(build()) as client:
        result = await client.call_tool("liar")
    assert result["isError"] is True
    assert "does not match its outputSchema" in result["content"][0]["text"]


async def test_content_blocks_and_own_results_pass_as_they_are() -> None:
    async with connect(build()) as client:
        own = await client.call_tool("own_result")
        blocks = await client.call_tool("blocks")
    assert own == {"content": [{"type": "text", "text": "as written"}]}
    assert blocks == {"content": [{"type": "text", "text": "a content block"}]}


async def test_values_are_sent_as_their_schema_describes_them() -> None:
    """A date goes as its ISO text; a model's field that is None stays, as the schema wants it."""
    async with connect(build()) as client:
        tools = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}
        today = await client.call_tool("today")
        notes = await client.call_tool("notes")
    assert today["structuredContent"] == {"result": "2026-12-03"}
    assert today["content"] == [{"type": "text", "text": "2026-12-03"}], "a string says itself"
    assert notes["structuredContent"] == {
        "result": [{"text": "undated", "due": None}, {"text": "dated", "due": "2027-01-01"}]
    }
    for name, result in (("today", today), ("notes", notes)):
        assert jsonschema_rs.validator_for(tools[name]["outputSchema"]).is_valid(result["structuredContent"])
