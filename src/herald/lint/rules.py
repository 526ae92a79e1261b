"""The rules `herald lint` checks, each with an id, a severity, a line of why, and its source.

Severity follows the words of the source: MUST and MUST NOT are errors, SHOULD and
SHOULD NOT are warnings, and a `note` points at something a reader should know without
it being wrong. A request that breaks what the other side declared it accepts (a tool's
`inputSchema`) is an error of its sender, as a malformed request is. The source is the
section of the specification (or of JSON-RPC 2.0, or of herald's job events) the rule
comes from, so a finding can be argued with.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

Severity = Literal["error", "warning", "note"]

SPEC: Final = "https://modelcontextprotocol.io/specification/2025-11-25"
SPEC_2026: Final = "https://modelcontextprotocol.io/specification/2026-07-28"
JSON_RPC: Final = "https://www.jsonrpc.org/specification"
#: herald's own definitions: the job event schemas a herald server publishes, and the log format.
JOB_EVENTS: Final = "herald job events: docs/design.md, and the resource herald://schemas/job-events"
LOG_FORMAT: Final = "herald message log: docs/message-log.md (herald log schema)"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    source: str


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


RULES: Final = _rules(
    # -- the log itself ------------------------------------------------------------------------
    Rule(
        "log/unreadable-record",
        "error",
        "A line of the log is not a record of a format version this linter reads.",
        LOG_FORMAT,
    ),
    Rule(
        "log/record-too-long",
        "warning",
        "A line of the log is longer than any record a recorder writes; it was passed over unread.",
        LOG_FORMAT,
    ),
    # -- JSON-RPC envelope ---------------------------------------------------------------------
    Rule("jsonrpc/parse-error", "error", "Bytes were sent that are not JSON.", f"{JSON_RPC}#response_object"),
    Rule(
        "jsonrpc/invalid-message",
        "error",
        "A message is not a JSON-RPC 2.0 request, notification or response.",
        f"{SPEC}/basic#messages",
    ),
    Rule(
        "jsonrpc/result-and-error",
        "error",
        "A response sets both `result` and `error`; it must set exactly one.",
        f"{JSON_RPC}#response_object",
    ),
    Rule(
        "jsonrpc/id-type",
        "error",
        "A request id must be a string or an integer, never null.",
        f"{SPEC}/basic#requests",
    ),
    Rule(
        "jsonrpc/response-without-id",
        "error",
        "A result response must carry the id of the request it answers.",
        f"{SPEC}/basic#result-responses",
    ),
    Rule(
        "jsonrpc/id-reused",
        "error",
        "A request reuses an id its sender already used in this session.",
        f"{SPEC}/basic#requests",
    ),
    Rule(
        "jsonrpc/unknown-id",
        "error",
        "A response answers an id no request in flight carries (or answers one twice).",
        f"{SPEC}/basic#result-responses",
    ),
    Rule(
        "jsonrpc/error-code",
        "error",
        "An error code is not an integer, or is reserved and not defined.",
        f"{JSON_RPC}#error_object",
    ),
    Rule(
        "jsonrpc/batch",
        "error",
        "A batch was sent where the negotiated version has no batches.",
        f"{SPEC}/basic/transports#sending-messages-to-the-server",
    ),
    Rule(
        "jsonrpc/request-without-id",
        "error",
        "A request method was sent without an id, so it became a notification nobody answers.",
        f"{SPEC}/basic#requests",
    ),
    Rule(
        "jsonrpc/notification-with-id",
        "error",
        "A notification method was sent with an id, so it became a request.",
        f"{SPEC}/basic#notifications",
    ),
    Rule(
        "jsonrpc/unanswered",
        "warning",
        "A request was never answered before its connection or stream ended.",
        f"{SPEC}/basic#requests",
    ),
    # -- MCP messages --------------------------------------------------------------------------
    Rule(
        "mcp/wrong-param-names",
        "error",
        "A request misnames its parameters: `tool`/`args` for `name`/`arguments`, `resourceId` for `uri`.",
        f"{SPEC}/server/tools#calling-tools",
    ),
    Rule(
        "mcp/result-missing-field",
        "error",
        "A result lacks a field its method's result must have.",
        f"{SPEC}/schema",
    ),
    Rule(
        "mcp/unstable-result-shape",
        "warning",
        "A method (or tool) answered with results of different shapes.",
        f"{SPEC}/server/tools#tool-result",
    ),
    Rule(
        "mcp/notification-as-answer",
        "warning",
        "A server notification carries what belongs in a response (a request's id, or a result).",
        f"{SPEC}/basic#notifications",
    ),
    Rule(
        "mcp/answered-after-cancel",
        "warning",
        "A request was answered after its sender cancelled it.",
        f"{SPEC}/basic/utilities/cancellation#behavior-requirements",
    ),
    Rule(
        "mcp/cancelled-initialize",
        "error",
        "A client cancelled its `initialize` request.",
        f"{SPEC}/basic/utilities/cancellation#behavior-requirements",
    ),
    # -- lifecycle and capabilities ------------------------------------------------------------
    Rule(
        "lifecycle/initialize-not-first",
        "error",
        "In the handshake era, `initialize` must be the first interaction.",
        f"{SPEC}/basic/lifecycle#initialization",
    ),
    Rule(
        "lifecycle/before-initialize-result",
        "warning",
        "The client sent a request other than ping before `initialize` was answered.",
        f"{SPEC}/basic/lifecycle#initialization",
    ),
    Rule(
        "lifecycle/before-initialized",
        "warning",
        "A request or notification (other than ping or logging) was sent before `notifications/initialized`.",
        f"{SPEC}/basic/lifecycle#initialization",
    ),
    Rule(
        "capabilities/undeclared",
        "error",
        "A method was used that the other side did not declare the capability for.",
        f"{SPEC}/basic/lifecycle#operation",
    ),
    Rule(
        "capabilities/list-changed-undeclared",
        "error",
        "A `list_changed` notification was sent without the `listChanged` capability.",
        f"{SPEC}/basic/lifecycle#operation",
    ),
    # -- tools ---------------------------------------------------------------------------------
    Rule(
        "tools/arguments-schema",
        "error",
        "A client called a tool with `arguments` its `inputSchema` (listed in the same log) refuses.",
        f"{SPEC}/server/tools#tool",
    ),
    Rule(
        "tools/structured-content-schema",
        "error",
        "A result's `structuredContent` is missing or does not match the tool's `outputSchema`.",
        f"{SPEC}/server/tools#output-schema",
    ),
    Rule(
        "tools/is-error-without-content",
        "error",
        "A tool result with `isError: true` has no `content` for the model to read.",
        f"{SPEC}/schema#calltoolresult",
    ),
    Rule(
        "tools/business-error-as-protocol-error",
        "warning",
        "A tool's own failure (a code of the server's own, a message saying what was not found or not"
        " allowed, -32602 for arguments its schema accepts) was sent as a JSON-RPC error; a model only"
        " sees results with `isError: true`.",
        f"{SPEC}/server/tools#error-handling",
    ),
    # -- progress ------------------------------------------------------------------------------
    Rule(
        "progress/backwards",
        "error",
        "A `notifications/progress` value did not increase.",
        f"{SPEC}/basic/utilities/progress#progress-flow",
    ),
    Rule(
        "progress/unknown-token",
        "error",
        "A `notifications/progress` names a token no request in flight gave.",
        f"{SPEC}/basic/utilities/progress#behavior-requirements",
    ),
    Rule(
        "progress/after-response",
        "error",
        "A `notifications/progress` came after the response to its request.",
        f"{SPEC}/basic/utilities/progress#implementation-notes",
    ),
    # -- Streamable HTTP -----------------------------------------------------------------------
    Rule(
        "http/response-on-get-stream",
        "error",
        "A response was sent on a GET stream that was not resuming a request's stream.",
        f"{SPEC}/basic/transports#listening-for-messages-from-the-server",
    ),
    Rule(
        "http/event-id-reused",
        "error",
        "An SSE event id was used again for a different message in the same session.",
        f"{SPEC}/basic/transports#resumability-and-redelivery",
    ),
    # -- 2026-07-28 ----------------------------------------------------------------------------
    Rule(
        "modern/missing-meta",
        "error",
        "A 2026-07-28 request lacks the `_meta` envelope (protocol version, client capabilities).",
        f"{SPEC_2026}/basic#meta",
    ),
    Rule(
        "modern/header-mismatch",
        "error",
        "A 2026-07-28 request's HTTP headers disagree with its body.",
        f"{SPEC_2026}/basic/transports/streamable-http#server-validation",
    ),
    # -- job events (herald) -------------------------------------------------------------------
    Rule(
        "jobs/missing-field",
        "error",
        "A job event lacks `eventId`, `jobId`, `timestamp` or a `type` that matches its method.",
        JOB_EVENTS,
    ),
    Rule("jobs/schema", "error", "A job event does not match the published schema of its type.", JOB_EVENTS),
    Rule(
        "jobs/illegal-transition",
        "error",
        "A job event is a transition the job state machine does not allow.",
        JOB_EVENTS,
    ),
    Rule("jobs/after-terminal", "error", "A job event came after the job had ended.", JOB_EVENTS),
    Rule("jobs/progress-backwards", "error", "A job's progress went back.", JOB_EVENTS),
    Rule("jobs/event-id-conflict", "error", "The same `eventId` came with different content.", JOB_EVENTS),
)


class UnknownRule(ValueError):
    """A rule pattern that names no rule."""


def select(rules: Iterable[str] = (), ignore: Iterable[str] = ()) -> frozenset[str]:
    """The ids of the rules to check: those matching `rules` (all when empty), less `ignore`.

    Patterns are ids or shell globs (`jobs/*`); one that matches no rule raises
    `UnknownRule`, naming the closest ids, so a typo is not a silent "all clear".
    """
    chosen = set(RULES) if not rules else set()
    for pattern in rules:
        chosen |= _matching(pattern)
    for pattern in ignore:
        chosen -= _matching(pattern)
    return frozenset(chosen)


def _matching(pattern: str) -> set[str]:
    found = {rule for rule in RULES if fnmatch.fnmatchcase(rule, pattern)}
    if not found:
        close = difflib.get_close_matches(pattern, list(RULES), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `herald lint --list-rules` lists them"
        raise UnknownRule(f"no rule matches {pattern!r}{hint}")
    return found
