"""What the fuzz suite sends: messages that look like MCP closely enough to reach every handler,
and far enough off to try every refusal.

Envelopes (any id, any `jsonrpc`, requests, notifications, responses, batches), params for
every method GiftGenius answers (with the names its tools, resources and prompts use, and
`_meta` with and without a 2026-07-28 envelope), headers (versions, session ids, methods,
names, hosts, origins, resumption ids), and raw bytes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from herald.server.handlers import HANDLERS

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01", ""]
METHODS = sorted(
    {
        *HANDLERS,
        "initialize",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
        "sampling/createMessage",
        "no/such/method",
        "",
    }
)
NAMES = [
    "suggest_gifts",
    "start_bulk_gift_analysis",
    "get_job_status",
    "cancel_job",
    "get_job_result",
    "gift_congrats_style",
    "nope",
    "",
]
URIS = [
    "giftgenius://catalog",
    "giftgenius://catalog/games",
    "herald://schemas/job-events",
    "ui://x",
    "x",
    "",
]

SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=15,
)
IDS = st.none() | st.integers(-5, 5) | st.sampled_from(["a", "b", ""]) | st.floats(allow_nan=False) | JSON

MODERN_META = st.fixed_dictionaries(
    {},
    optional={
        "io.modelcontextprotocol/protocolVersion": st.sampled_from(VERSIONS) | JSON,
        "io.modelcontextprotocol/clientCapabilities": st.just({}) | JSON,
        "io.modelcontextprotocol/clientInfo": JSON,
        "io.modelcontextprotocol/logLevel": st.sampled_from(["debug", "info", "nope"]) | JSON,
        "progressToken": IDS,
    },
)
ARGUMENTS = (
    st.fixed_dictionaries(
        {},
        optional={
            "occasion": st.sampled_from(["birthday", "wedding", ""]) | JSON,
            "budget": st.floats(allow_nan=True, allow_infinity=True) | st.integers() | JSON,
            "recipient": st.text(max_size=30) | JSON,
            "count": st.integers(-3, 1000) | JSON,
            "csv": st.sampled_from(["name,department,interests,budget\nAna,Eng,tea,10\n", "", "a;b\n1"])
            | JSON,
            "jobId": st.sampled_from(["0" * 32, ""]) | JSON,
            "cursor": st.text(max_size=20) | JSON,
            "recipient_name": st.text(max_size=10) | JSON,
            "tone": JSON,
        },
    )
    | JSON
)
PARAMS = (
    st.none()
    | JSON
    | st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(NAMES) | JSON,
            "arguments": ARGUMENTS,
            "uri": st.sampled_from(URIS) | JSON,
            "cursor": st.text(max_size=20) | JSON,
            "level": st.sampled_from(["debug", "error", "nope"]) | JSON,
            "protocolVersion": st.sampled_from(VERSIONS) | JSON,
            "capabilities": JSON,
            "clientInfo": JSON,
            "requestId": IDS,
            "taskId": st.sampled_from(["0" * 32, ""]) | JSON,
            "task": JSON,
            "notifications": st.fixed_dictionaries(
                {},
                optional={
                    "io.herald/jobEvents": JSON,
                    "toolsListChanged": JSON,
                    "resourceSubscriptions": JSON,
                },
            )
            | JSON,
            "ref": JSON,
            "argument": JSON,
            "inputResponses": JSON,
            "requestState": st.text(max_size=40) | JSON,
            "_meta": MODERN_META | JSON,
        },
    )
)
REQUESTS = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]), "method": st.sampled_from(METHODS) | JSON},
    optional={"id": IDS, "params": PARAMS},
)
RESPONSES = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")}, optional={"id": IDS, "result": JSON, "error": JSON}
)
MESSAGES = REQUESTS | RESPONSES | JSON
BODIES = MESSAGES | st.lists(MESSAGES, max_size=4)

#: What can stand in a header value: visible ASCII, spaces inside (a client cannot send the rest).
HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30).map(str.strip)
HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "mcp-protocol-version": st.sampled_from(VERSIONS) | HEADER_TEXT,
        "mcp-session-id": HEADER_TEXT,
        "mcp-method": st.sampled_from(METHODS) | HEADER_TEXT,
        "mcp-name": st.sampled_from(NAMES) | HEADER_TEXT,
        "last-event-id": HEADER_TEXT,
        "accept": st.sampled_from(["application/json, text/event-stream", "text/event-stream", "*/*", ""]),
        "content-type": st.sampled_from(
            ["application/json", "text/plain", "application/json; charset=utf-8"]
        ),
        "origin": st.sampled_from(["http://localhost:1", "null", "http://evil.example", "x"]),
    },
)
