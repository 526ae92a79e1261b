"""The tool rules: calls and results checked against the schemas the same log listed.

`tools/list` results teach the linter each tool's `inputSchema` and `outputSchema`
(compiled once per distinct schema); calls and results that come later are checked
against them. A tool the log never listed is not judged.

A tool's own failure belongs in a result with `isError: true`, which the model reads;
a JSON-RPC error is for the protocol (an unknown tool, a malformed request). Two error
answers give a business failure away: a code of the server's own (outside the codes
the protocol defines), and -32602 for arguments that match the tool's schema, since
then it is their meaning the tool refused, not their form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import jsonschema_rs
import orjson

#: Codes that are the protocol's own business when a tool call is answered with an error.
PROTOCOL_CODES: Final = frozenset({-32700, -32600, -32601, -32602, -32603, -32042, -32020, -32021, -32022})
INVALID_PARAMS: Final = -32602

Report = Callable[[str, str], None]


@dataclass(slots=True)
class Tool:
    inputs: Any  # a compiled validator, or None
    outputs: Any
    input_schema: Any


class ToolCatalog:
    """The tools a log listed, with compiled validators."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self._compiled: dict[bytes, Any] = {}

    def learn(self, result: dict[str, Any]) -> None:
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                input_schema = tool.get("inputSchema")
                self.tools[tool["name"]] = Tool(
                    self._compile(input_schema), self._compile(tool.get("outputSchema")), input_schema
                )

    def _compile(self, schema: Any) -> Any:
        if not isinstance(schema, dict):
            return None
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        if key not in self._compiled:
            try:
                self._compiled[key] = jsonschema_rs.validator_for(schema)
            except (ValueError, jsonschema_rs.ValidationError):
                self._compiled[key] = None  # a schema we cannot compile judges nothing
        return self._compiled[key]

    def check_arguments(self, name: str, arguments: Any, report: Report) -> None:
        tool = self.tools.get(name)
        if tool is None or tool.inputs is None:
            return
        given = arguments if arguments is not None else {}
        if not tool.inputs.is_valid(given):
            report("tools/arguments-schema", f"arguments of {name}: {_first_error(tool.inputs, given)}")

    def check_result(self, name: str | None, result: dict[str, Any], report: Report) -> None:
        if result.get("isError") is True:
            content = result.get("content")
            if not isinstance(content, list) or not content:
                report("tools/is-error-without-content", f"{name} failed with no content to say why")
            return
        tool = self.tools.get(name) if name is not None else None
        if tool is None or tool.outputs is None:
            return
        if "structuredContent" not in result:
            report(
                "tools/structured-content-schema",
                f"{name} declares an outputSchema but sent no structuredContent",
            )
        elif not tool.outputs.is_valid(result["structuredContent"]):
            problem = _first_error(tool.outputs, result["structuredContent"])
            report("tools/structured-content-schema", f"structuredContent of {name}: {problem}")

    def check_error(self, name: str | None, arguments: Any, code: Any, report: Report) -> None:
        if not isinstance(code, int) or code in PROTOCOL_CODES - {INVALID_PARAMS}:
            return
        if code != INVALID_PARAMS:
            report(
                "tools/business-error-as-protocol-error",
                f"{name} was answered with error {code}, a code of the server's own: "
                "a tool's failure is a result with isError: true",
            )
            return
        tool = self.tools.get(name) if name is not None else None
        if tool is not None and tool.inputs is not None and tool.inputs.is_valid(arguments or {}):
            report(
                "tools/business-error-as-protocol-error",
                f"{name} refused arguments that match its inputSchema with -32602: "
                "what the tool objects to belongs in a result with isError: true",
            )


def _first_error(validator: Any, instance: Any) -> str:
    for error in validator.iter_errors(instance):
        path = "/".join(str(part) for part in error.instance_path)
        return f"{error.message}" + (f" (at /{path})" if path else "")
    return "does not match"  # pragma: no cover - called only when the instance is invalid
