"""The tool rules: calls and results checked against the schemas the same log listed.

`tools/list` results teach the linter each tool's `inputSchema` and `outputSchema`
(compiled once per distinct schema); calls and results that come later are checked
against them. A tool the log never listed is not judged.

A call's arguments that break the tool's `inputSchema` are the client's mistake: the
schema is what the server declared it accepts.

A tool's own failure belongs in a result with `isError: true`, which the model reads;
a JSON-RPC error is for the protocol (an unknown tool, a malformed request, a server
error). Three error answers give a business failure away:

- a code of the server's own, outside the codes JSON-RPC and MCP define;
- one of JSON-RPC's codes with a message that says the tool's own work failed (something
  "not found", "no such", "not allowed", "access denied"…) about no part of the protocol
  (a method, a tool, the request, its params, the session): "Gift 42 not found" is the
  tool's, "Unknown tool: gifts" and "Method not found" are the protocol's;
- -32602 for arguments that match the tool's schema, since then it is their meaning the
  tool refused, not their form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import jsonschema_rs
import orjson

from herald.lint.messages import DEFINED_CODES

#: Codes that are the protocol's own business when a tool call is answered with an error.
PROTOCOL_CODES: Final = DEFINED_CODES | {-32042, -32020, -32021, -32022}
INVALID_PARAMS: Final = -32602
#: How an error message says that the tool's own work failed: what it looked for is not
#: there, or the caller may not have it.
DOMAIN_FAILURE: Final = re.compile(
    r"\b(?:not found|no such|does not exist|doesn't exist|not allowed|not permitted|permission denied"
    r"|access denied|forbidden|unauthori[sz]ed|not authori[sz]ed)\b",
    re.IGNORECASE,
)
#: What a protocol error's message is about; a message naming one of these is not the tool's failure.
PROTOCOL_WORDS: Final = re.compile(
    r"\b(?:methods?|tools?|requests?|params|parameters?|arguments?|json|json-?rpc|sessions?|protocol"
    r"|capabilit(?:y|ies))\b",
    re.IGNORECASE,
)

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
            problem = _first_error(tool.inputs, given)
            report(
                "tools/arguments-schema",
                f"the client called {name} with arguments its inputSchema refuses: {problem}",
            )

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

    def check_error(self, name: str | None, arguments: Any, error: dict[str, Any], report: Report) -> None:
        code, message = error.get("code"), error.get("message")
        if type(code) is not int:
            return  # `jsonrpc/error-code` says what is wrong with it
        if code not in PROTOCOL_CODES:
            report(
                "tools/business-error-as-protocol-error",
                f"{name} was answered with error {code}, a code of the server's own: "
                "a tool's failure is a result with isError: true",
            )
            return
        if code in DEFINED_CODES and type(message) is str and _tells_of_domain_failure(message):
            report(
                "tools/business-error-as-protocol-error",
                f"{name} was answered with error {code}, {message!r}, a failure of the tool's own: "
                "it belongs in a result with isError: true, where the model reads it",
            )
            return
        if code != INVALID_PARAMS:
            return
        tool = self.tools.get(name) if name is not None else None
        if tool is not None and tool.inputs is not None and tool.inputs.is_valid(arguments or {}):
            report(
                "tools/business-error-as-protocol-error",
                f"{name} refused arguments that match its inputSchema with -32602: "
                "what the tool objects to belongs in a result with isError: true",
            )


def _tells_of_domain_failure(message: str) -> bool:
    """Whether an error message says that the tool's own work failed, about no part of the protocol."""
    return DOMAIN_FAILURE.search(message) is not None and PROTOCOL_WORDS.search(message) is None


def _first_error(validator: Any, instance: Any) -> str:
    for error in validator.iter_errors(instance):
        path = "/".join(str(part) for part in error.instance_path)
        return f"{error.message}" + (f" (at /{path})" if path else "")
    return "does not match"  # pragma: no cover - called only when the instance is invalid
