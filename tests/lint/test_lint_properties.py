"""Whatever a log holds, the linter and the timeline read it to the end: a finding, or a line
saying the record is unreadable, never an exception.

The records are generated from the shapes the linter looks into (kinds, senders,
sessions, streams, event ids, HTTP headers, JSON-RPC messages with every method it
knows and ids, params and results of any JSON type), and from raw bytes.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herald.lint import Finding, lint_lines, lint_stream
from herald.lint.messages import REQUIRED_RESULT_FIELDS, SERVER_CAPABILITY, STANDARD_NOTIFICATIONS
from herald.wire.timeline import conversations, mermaid, steps

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
METHODS = st.sampled_from(
    [
        *sorted({*SERVER_CAPABILITY, *STANDARD_NOTIFICATIONS, *REQUIRED_RESULT_FIELDS}),
        "initialize",
        "ping",
        "notifications/job/progress",
        "notifications/job/created",
        "x/unknown",
    ]
)
IDS = (
    st.none() | st.integers(-3, 3) | st.sampled_from(["a", "b"]) | st.floats(allow_nan=False) | st.booleans()
)
PARAMS = (
    st.none()
    | JSON
    | st.fixed_dictionaries(
        {},
        optional={
            "name": JSON,
            "arguments": JSON,
            "uri": JSON,
            "_meta": st.fixed_dictionaries(
                {}, optional={"progressToken": IDS, "io.modelcontextprotocol/protocolVersion": JSON}
            ),
            "progressToken": IDS,
            "progress": JSON,
            "requestId": IDS,
            "eventId": st.text(max_size=6),
            "jobId": st.sampled_from(["j1", "j2"]),
            "type": st.sampled_from(["job.progress", "job.created", "job.completed"]),
            "timestamp": st.text(max_size=4),
            "percentage": JSON,
            "capabilities": JSON,
        },
    )
)
MESSAGES = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0"]), "method": METHODS},
        optional={"id": IDS, "params": PARAMS},
    ),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "id": IDS},
        optional={"result": JSON, "error": JSON},
    ),
)
RECORDS = st.fixed_dictionaries(
    {
        "v": st.sampled_from([1, 1, 1, 2]),
        "kind": st.sampled_from(["message", "message", "unparsed", "http", "end", "start", "other"]),
        "from": st.sampled_from(["client", "server", "recorder", "nobody"]),
    },
    optional={
        "time": st.sampled_from(["2026-12-02T00:00:00.000001Z", "yesterday"]) | JSON,
        "transport": st.sampled_from(["stdio", "http"]) | JSON,
        "session": st.sampled_from(["s1", "s2"]) | JSON,
        "stream": st.sampled_from(["post-1", "get-2"]) | JSON,
        "eventId": st.sampled_from(["e1", "e2"]) | JSON,
        "message": MESSAGES,
        "http": st.fixed_dictionaries(
            {}, optional={"method": JSON, "headers": JSON | st.just({"last-event-id": "e1"}), "status": JSON}
        )
        | JSON,
        "reason": JSON,
        "parseError": JSON,
    },
)


def read_all(lines: list[bytes]) -> list[Finding]:
    found: list[Finding] = []
    assert lint_lines(lines, found.append) == sum(1 for line in lines if not line.isspace())
    streamed: list[Finding] = []
    lint_stream(io.BytesIO(b"".join(lines)), streamed.append)
    said = [(finding.rule_id, finding.line) for finding in found]
    assert [(finding.rule_id, finding.line) for finding in streamed] == said, "the same from a stream"
    timeline = list(steps(lines))
    for name in conversations(timeline):
        assert mermaid(timeline, name).startswith("sequenceDiagram")
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(RECORDS, max_size=25))
@pytest.mark.slow
def test_any_records_give_findings_never_an_exception(records: list[dict[str, Any]]) -> None:
    read_all([orjson.dumps(record) + b"\n" for record in records])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=60).filter(lambda line: b"\n" not in line), max_size=12))
def test_any_bytes_give_findings_never_an_exception(lines: list[bytes]) -> None:
    found = read_all([line + b"\n" for line in lines])
    unreadable = [line for line in lines if line.strip()]
    assert len([finding for finding in found if finding.rule_id == "log/unreadable-record"]) >= sum(
        1 for line in unreadable if not _is_record(line)
    )


def _is_record(line: bytes) -> bool:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("v") == 1
