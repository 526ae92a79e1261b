"""Each rule, on hand-made logs: the message that breaks it is found, and its lawful neighbour is not.

The logs are written with `MessageLog`, the writer the recorders use, so they are logs as
`herald record` writes them; `tests/lint/test_mistakes.py` makes the same mistakes with
real processes.
"""

from __future__ import annotations

import io
import re
from typing import Any

import orjson
import pytest

from herald.lint import Finding, Linter, UnknownRule, lint_lines, select
from herald.lint.bounded import Recent
from herald.lint.engine import CONVERSATIONS, TRIM_EVERY
from herald.lint.rules import RULES
from herald.wire.writer import MessageLog
from tests.servers import REPO

HANDSHAKE = "2025-11-25"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Log:
    """A log written step by step: stdio by default, or HTTP exchanges with `stream=`."""

    def __init__(self, transport: str = "stdio") -> None:
        self.buffer = io.BytesIO()
        self.log = MessageLog(self.buffer)
        self.transport: Any = transport
        self.session: str | None = "s1" if transport == "stdio" else None
        if transport == "stdio":
            self.log.start("stdio", "test", "server", session="s1")

    def client(self, message: Any, **where: Any) -> Log:
        return self._message("client", message, **where)

    def server(self, message: Any, **where: Any) -> Log:
        return self._message("server", message, **where)

    def _message(self, sender: Any, message: Any, **where: Any) -> Log:
        where.setdefault("session", self.session)
        self.log.message(sender, self.transport, orjson.dumps(message), **where)
        return self

    def handshake(self, server_capabilities: Any = None, client_capabilities: Any = None) -> Log:
        params = {
            "protocolVersion": HANDSHAKE,
            "capabilities": client_capabilities or {},
            "clientInfo": {"name": "t"},
        }
        result = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {"tools": {}} if server_capabilities is None else server_capabilities,
            "serverInfo": {"name": "s", "version": "1"},
        }
        self.client(request(0, "initialize", params)).server(answer(0, result))
        return self.client(notification("notifications/initialized"))

    def lines(self) -> list[bytes]:
        self.log.flush()
        return self.buffer.getvalue().splitlines(keepends=True)

    def findings(self, rules: frozenset[str] = frozenset(RULES)) -> list[Finding]:
        found: list[Finding] = []
        lint_lines(self.lines(), found.append, rules)
        return found

    def rules(self) -> list[str]:
        return [finding.rule_id for finding in self.findings()]


def request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method} | (
        {"params": params} if params is not None else {}
    )


def notification(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method} | ({"params": params} if params is not None else {})


def answer(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error(request_id: Any, code: Any, message: str = "no") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def test_a_clean_conversation_has_no_findings() -> None:
    log = Log().handshake().client(request(1, "tools/list")).server(answer(1, {"tools": []}))
    log.client(request(2, "ping")).server(answer(2, {}))
    assert log.rules() == []


# -- the log and the envelope -------------------------------------------------------------------


def test_lines_that_are_not_records_are_said_once_each() -> None:
    lines = [
        b"not json\n",
        b"[1]\n",
        b'{"v": 9, "kind": "message"}\n',
        b'{"v": 1, "kind": "nonsense", "from": "client"}\n',
    ]
    found: list[Finding] = []
    assert lint_lines(lines, found.append) == 4
    assert [(finding.rule_id, finding.line) for finding in found] == [
        ("log/unreadable-record", n) for n in (1, 2, 3, 4)
    ]


def test_bytes_that_are_not_json_are_a_parse_error() -> None:
    log = Log()
    log.log.message("client", "stdio", b"{oops", session="s1")
    assert log.rules() == ["jsonrpc/parse-error"]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        "just a string",
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]},
        {"jsonrpc": "2.0", "method": 7},
    ],
)
def test_messages_that_are_not_json_rpc(message: Any) -> None:
    assert "jsonrpc/invalid-message" in Log().handshake().client(message).rules()


@pytest.mark.parametrize("bad_id", [None, 1.5, True, {"n": 1}])
def test_request_ids_are_strings_or_integers(bad_id: Any) -> None:
    assert Log().handshake().client(request(bad_id, "ping")).rules() == ["jsonrpc/id-type"]


def test_a_notification_method_with_an_id_is_a_request_in_disguise() -> None:
    log = Log().handshake().client(request(5, "notifications/cancelled", {"requestId": 1}))
    assert log.rules() == ["jsonrpc/notification-with-id"]


def test_a_request_method_without_an_id_goes_unanswered() -> None:
    assert Log().handshake().client(notification("tools/list")).rules() == ["jsonrpc/request-without-id"]


def test_ids_in_flight_and_ids_used_before() -> None:
    log = Log().handshake().client(request(1, "ping")).client(request(1, "ping"))
    assert log.rules() == ["jsonrpc/id-reused"]
    again = Log().handshake().client(request(1, "ping")).server(answer(1, {})).client(request(1, "ping"))
    assert again.rules() == ["jsonrpc/id-reused"]
    # Each side numbers its own requests: the server's id 1 is not the client's.
    both = Log().handshake(client_capabilities={"roots": {}}).client(request(1, "ping"))
    both.server(request(1, "roots/list")).client(answer(1, {"roots": []})).server(answer(1, {}))
    assert both.rules() == []


def test_responses_pair_with_requests() -> None:
    assert Log().handshake().server(answer(42, {})).rules() == ["jsonrpc/unknown-id"]
    twice = Log().handshake().client(request(1, "ping")).server(answer(1, {})).server(answer(1, {}))
    assert [finding.message for finding in twice.findings()] == [
        "a response to id 1, which was answered already"
    ]
    both = (
        Log()
        .handshake()
        .client(request(1, "ping"))
        .server(answer(1, {}) | {"error": {"code": -32603, "message": "x"}})
    )
    assert both.rules() == ["jsonrpc/result-and-error"]
    # An error whose request could not be read has no id to carry.
    assert Log().handshake().server(error(None, -32700, "Parse error")).rules() == []


@pytest.mark.parametrize(
    ("code", "found"),
    [
        (-32601, []),
        (-32050, []),  # the server's own range
        (-32500, ["jsonrpc/error-code"]),  # reserved, defined by no one
        ("-32601", ["jsonrpc/error-code"]),
        (4, []),  # outside the reserved range: the application's
    ],
)
def test_error_codes(code: Any, found: list[str]) -> None:
    assert Log().handshake().client(request(1, "ping")).server(error(1, code)).rules() == found


def test_2026_codes() -> None:
    def answered_with(code: int) -> list[str]:
        log = Log().client(request(1, "tools/list", {"_meta": MODERN_META}))
        return log.server(error(1, code)).rules()

    assert answered_with(-32002) == ["jsonrpc/error-code"]  # resource not found is -32602 now
    assert answered_with(-32050) == ["jsonrpc/error-code"]  # reserved for the specification
    assert answered_with(-32020) == []  # HeaderMismatch


def test_batches_only_where_the_version_has_them() -> None:
    batch = [request(1, "ping"), request(2, "ping")]
    assert Log().handshake().client(batch).rules() == ["jsonrpc/batch"]
    old = Log()
    params = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t"}}
    old.client(request(0, "initialize", params))
    old.server(answer(0, {"protocolVersion": "2025-03-26", "capabilities": {}, "serverInfo": {"name": "s"}}))
    old.client(notification("notifications/initialized")).client(batch)
    assert old.rules() == []


def test_unanswered_requests_when_the_server_ends() -> None:
    log = Log().handshake().client(request(1, "tools/list"))
    log.log.end("server", "stdio", "exit 0", session="s1")
    assert log.rules() == ["jsonrpc/unanswered"]
    # The client leaving is not the server's failure, and a log that just stops says nothing.
    assert Log().handshake().client(request(1, "tools/list")).rules() == []


# -- MCP messages -------------------------------------------------------------------------------


def test_wrong_parameter_names() -> None:
    tool = Log().handshake().client(request(1, "tools/call", {"tool": "x", "args": {}}))
    assert tool.rules() == ["mcp/wrong-param-names"]
    resource = (
        Log().handshake({"resources": {}}).client(request(1, "resources/read", {"resourceId": "a://b"}))
    )
    assert resource.rules() == ["mcp/wrong-param-names"]
    missing = Log().handshake({"prompts": {}}).client(request(1, "prompts/get", {"arguments": {}}))
    assert missing.rules() == ["mcp/wrong-param-names"]
    right = Log().handshake().client(request(1, "tools/call", {"name": "x", "arguments": {}}))
    assert right.rules() == []


def test_results_have_their_fields() -> None:
    log = Log().handshake().client(request(1, "tools/list")).server(answer(1, {"items": []}))
    assert log.rules() == ["mcp/result-missing-field"]
    call = Log().handshake().client(request(1, "tools/call", {"name": "x"})).server(answer(1, {"text": "hi"}))
    assert call.rules() == ["mcp/result-missing-field"]
    # A call made a task answers with the task, not the tool's result.
    task = Log().handshake().client(request(1, "tools/call", {"name": "x", "task": {}}))
    assert task.server(answer(1, {"task": {"taskId": "t1", "status": "working"}})).rules() == []


def test_answers_after_a_cancel_and_a_cancelled_initialize() -> None:
    log = Log().handshake().client(request(1, "tools/call", {"name": "x"}))
    log.client(notification("notifications/cancelled", {"requestId": 1})).server(answer(1, {"content": []}))
    assert log.rules() == ["mcp/answered-after-cancel"]
    init = Log().client(
        request(0, "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {}})
    )
    assert init.client(notification("notifications/cancelled", {"requestId": 0})).rules() == [
        "mcp/cancelled-initialize"
    ]


def test_a_notification_carrying_a_result() -> None:
    log = Log().handshake().client(request(1, "tools/call", {"name": "x"}))
    log.server(notification("notifications/x/done", {"result": {"ok": True}}))
    assert log.rules() == ["mcp/notification-as-answer"]
    # Job events and standard notifications name jobs and tokens, not answers.
    fine = Log().handshake().server(notification("notifications/message", {"level": "info", "data": "x"}))
    assert fine.rules() == ["capabilities/undeclared"]  # logging was not declared


# -- lifecycle and capabilities -----------------------------------------------------------------


def test_initialize_comes_first() -> None:
    assert Log().client(request(1, "tools/list")).rules() == ["lifecycle/initialize-not-first"]
    # A log that starts mid-session (an HTTP session first seen after its initialize) is not judged.
    http = Log("http").client(request(1, "tools/list"), session="abc", stream="post-9")
    assert http.rules() == []


def test_chatter_before_the_handshake_ends() -> None:
    params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {}}
    early = Log().client(request(0, "initialize", params)).client(request(1, "tools/list"))
    assert early.rules() == ["lifecycle/before-initialize-result"]
    ping = Log().client(request(0, "initialize", params)).client(request(1, "ping"))
    assert ping.rules() == []
    server = Log().client(request(0, "initialize", params))
    server.server(answer(0, {"protocolVersion": HANDSHAKE, "capabilities": {}, "serverInfo": {}}))
    server.server(request(7, "ping")).server(request(8, "roots/list"))
    assert server.rules() == ["lifecycle/before-initialized", "capabilities/undeclared"]


def test_capabilities_both_ways() -> None:
    assert Log().handshake({"tools": {}}).client(request(1, "prompts/list")).rules() == [
        "capabilities/undeclared"
    ]
    subscribe = Log().handshake({"resources": {}}).client(request(1, "resources/subscribe", {"uri": "a://b"}))
    assert subscribe.rules() == ["capabilities/undeclared"]
    sampling = Log().handshake().server(request(1, "sampling/createMessage", {"messages": []}))
    assert sampling.rules() == ["capabilities/undeclared"]
    declared = (
        Log().handshake(client_capabilities={"sampling": {}}).server(request(1, "sampling/createMessage", {}))
    )
    assert declared.rules() == []


def test_list_changed_needs_its_capability() -> None:
    undeclared = Log().handshake({"tools": {}}).server(notification("notifications/tools/list_changed"))
    assert undeclared.rules() == ["capabilities/list-changed-undeclared"]
    declared = (
        Log()
        .handshake({"tools": {"listChanged": True}})
        .server(notification("notifications/tools/list_changed"))
    )
    assert declared.rules() == []


# -- tools ------------------------------------------------------------------------------------

TOOL = {
    "name": "add",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
}


def listed() -> Log:
    return Log().handshake().client(request(1, "tools/list")).server(answer(1, {"tools": [TOOL]}))


def test_arguments_and_structured_content_against_the_listed_schemas() -> None:
    good = listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    assert good.server(answer(2, {"content": [], "structuredContent": {"sum": 1}})).rules() == []
    bad_arguments = listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": "one"}}))
    assert bad_arguments.rules() == ["tools/arguments-schema"]
    bad_output = listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    assert bad_output.server(answer(2, {"content": [], "structuredContent": {"total": 1}})).rules() == [
        "tools/structured-content-schema"
    ]
    missing = listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    assert missing.server(answer(2, {"content": []})).rules() == ["tools/structured-content-schema"]


def test_arguments_the_schema_refuses_are_the_clients_error() -> None:
    [finding] = (
        listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": "one"}})).findings()
    )
    assert (finding.rule_id, finding.severity) == ("tools/arguments-schema", "error")
    assert finding.message.startswith("the client called add with arguments its inputSchema refuses: ")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32603, "Gift 42 not found"),
        (-32602, "No such order: 7"),
        (-32600, "Not allowed: the list belongs to someone else"),
        (-32603, "Access denied"),
        (-32602, "The wishlist does not exist"),
    ],
)
def test_a_tools_failure_is_told_by_its_words_under_a_protocol_code(code: int, message: str) -> None:
    """A tool the log never listed, so its arguments cannot tell: the message does."""
    call = Log().handshake().client(request(2, "tools/call", {"name": "lookup", "arguments": {"id": 42}}))
    assert call.server(error(2, code, message)).rules() == ["tools/business-error-as-protocol-error"]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32602, "Unknown tool: lookup"),
        (-32602, "Tool lookup not found"),
        (-32602, "Invalid params: id is required"),
        (-32602, "Invalid arguments: no such field 'colour'"),
        (-32601, "Method not found"),
        (-32601, "Method not found: tools/call (this server declares no tools capability)"),
        (-32600, "Invalid Request"),
        (-32600, "Session not found"),
        (-32603, "Internal error"),
        (-32700, "Parse error"),
        (-32042, "Access denied until the user signs in at the URL"),
    ],
)
def test_protocol_errors_of_a_tool_call_are_not_business_failures(code: int, message: str) -> None:
    call = Log().handshake().client(request(2, "tools/call", {"name": "lookup", "arguments": {"id": 42}}))
    assert call.server(error(2, code, message)).rules() == []


def test_business_failures_sent_as_protocol_errors() -> None:
    valid = listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    assert valid.server(error(2, -32602, "a is too big")).rules() == [
        "tools/business-error-as-protocol-error"
    ]
    invalid = listed().client(request(2, "tools/call", {"name": "add", "arguments": {}}))
    assert invalid.server(error(2, -32602, "a is required")).rules() == ["tools/arguments-schema"]
    internal = listed().client(request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    assert internal.server(error(2, -32603, "crashed")).rules() == []


def test_unstable_shapes_but_optional_fields_may_come_and_go() -> None:
    log = Log().handshake().client(request(1, "tools/call", {"name": "x"}))
    log.server(answer(1, {"content": [], "structuredContent": {"gifts": [], "notice": "n"}}))
    log.client(request(2, "tools/call", {"name": "x"})).server(
        answer(2, {"content": [], "structuredContent": {"gifts": []}})
    )
    assert log.rules() == []
    log.client(request(3, "tools/call", {"name": "x"})).server(
        answer(3, {"content": [], "structuredContent": {"items": []}})
    )
    assert log.rules() == ["mcp/unstable-result-shape"]


# -- progress ---------------------------------------------------------------------------------


def test_progress_tokens_and_values() -> None:
    log = Log().handshake().client(request(1, "tools/call", {"name": "x", "_meta": {"progressToken": "p"}}))
    for value in (1, 2, 2):
        log.server(notification("notifications/progress", {"progressToken": "p", "progress": value}))
    log.server(answer(1, {"content": []}))
    log.server(notification("notifications/progress", {"progressToken": "p", "progress": 3}))
    log.server(notification("notifications/progress", {"progressToken": "q", "progress": 1}))
    assert log.rules() == ["progress/backwards", "progress/after-response", "progress/unknown-token"]


# -- Streamable HTTP ----------------------------------------------------------------------------


def http_session() -> Log:
    log = Log("http")
    params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {}}
    log.client(request(0, "initialize", params), session=None, stream="post-1")
    result = {"protocolVersion": HANDSHAKE, "capabilities": {"tools": {}}, "serverInfo": {}}
    log.server(answer(0, result), session="S", stream="post-1")
    return log.client(notification("notifications/initialized"), session="S", stream="post-2")


def test_the_session_an_initialize_mints_is_one_conversation_with_it() -> None:
    log = http_session().client(request(1, "tools/list"), session="S", stream="post-3")
    assert log.server(answer(1, {"tools": []}), session="S", stream="post-3").rules() == []


def test_responses_on_a_get_stream_only_when_resuming() -> None:
    log = http_session().client(request(1, "tools/list"), session="S", stream="post-3")
    log.log.http("client", session="S", stream="get-4", http={"method": "GET", "path": "/mcp", "headers": {}})
    assert log.server(answer(1, {"tools": []}), session="S", stream="get-4").rules() == [
        "http/response-on-get-stream"
    ]
    resumed = http_session().client(request(1, "tools/list"), session="S", stream="post-3")
    get = {"method": "GET", "path": "/mcp", "headers": {"last-event-id": "post-3:0"}}
    resumed.log.http("client", session="S", stream="get-4", http=get)
    assert resumed.server(answer(1, {"tools": []}), session="S", stream="get-4").rules() == []


def test_a_replayed_event_is_skipped_and_a_reused_event_id_is_not() -> None:
    log = http_session().client(request(1, "ping"), session="S", stream="post-3")
    log.server(answer(1, {}), session="S", stream="post-3", event_id="e1")
    log.server(answer(1, {}), session="S", stream="get-4", event_id="e1")  # a replay
    assert log.rules() == []
    log.server(notification("notifications/tools/list_changed"), session="S", stream="get-4", event_id="e1")
    assert log.rules() == ["http/event-id-reused", "capabilities/list-changed-undeclared"]


# -- 2026-07-28 ---------------------------------------------------------------------------------


def modern_headers(method: str, name: str | None = None) -> dict[str, Any]:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method} | (
        {"mcp-name": name} if name else {}
    )
    return {"method": "POST", "path": "/mcp", "headers": headers}


def test_modern_requests_carry_their_envelope() -> None:
    good = Log("http").client(
        request(1, "tools/call", {"name": "x", "_meta": MODERN_META}),
        stream="post-1",
        http=modern_headers("tools/call", "x"),
    )
    assert good.rules() == []
    no_meta = Log("http").client(request(1, "tools/list"), stream="post-1", http=modern_headers("tools/list"))
    assert no_meta.rules() == ["modern/missing-meta"]
    no_capabilities = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    partial = (
        Log()
        .client(request(1, "server/discover", {"_meta": MODERN_META}))
        .client(request(2, "tools/list", {"_meta": no_capabilities}))
    )
    assert partial.rules() == ["modern/missing-meta"]


def test_modern_headers_must_mirror_the_body() -> None:
    wrong_name = Log("http").client(
        request(1, "tools/call", {"name": "x", "_meta": MODERN_META}),
        stream="post-1",
        http=modern_headers("tools/call", "y"),
    )
    assert wrong_name.rules() == ["modern/header-mismatch"]
    wrong_method = Log("http").client(
        request(1, "tools/list", {"_meta": MODERN_META}), stream="post-1", http=modern_headers("prompts/list")
    )
    assert wrong_method.rules() == ["modern/header-mismatch"]


def test_modern_exchanges_are_forgotten_once_answered() -> None:
    log = Log("http")
    for number in range(1, 50):
        stream = f"post-{number}"
        log.client(
            request(1, "tools/list", {"_meta": MODERN_META}), stream=stream, http=modern_headers("tools/list")
        )
        log.server(answer(1, {"tools": []}), stream=stream)
    assert log.rules() == []  # the same id in every exchange is no reuse


# -- job events ---------------------------------------------------------------------------------


def job_event(sequence: int, kind: str, **payload: Any) -> dict[str, Any]:
    base = {
        "eventId": f"j:{sequence}",
        "type": f"job.{kind}",
        "jobId": "j",
        "timestamp": "2026-12-02T00:00:00Z",
    }
    return notification(f"notifications/job/{kind}", base | payload)


def job(*events: dict[str, Any]) -> list[str]:
    log = Log().handshake()
    for event in events:
        log.server(event)
    return log.rules()


CREATED = job_event(1, "created", tool="t", status="pending")
STARTED = job_event(2, "started", status="running")


def test_a_lawful_job_with_repeats() -> None:
    half = job_event(3, "progress", percentage=50.0, stage="half")
    done = job_event(4, "completed", status="completed", resultResourceId="r://1")
    assert job(CREATED, STARTED, half, half, done, done) == []


def test_job_event_rules() -> None:
    assert job(notification("notifications/job/started", {"jobId": "j"})) == ["jobs/missing-field"]
    assert job(job_event(1, "created", status="pending")) == ["jobs/schema"]  # no tool
    assert job(CREATED, CREATED | {"params": CREATED["params"] | {"eventId": "j:9"}}) == [
        "jobs/illegal-transition"
    ]
    assert job(CREATED, job_event(2, "progress", percentage=10.0, stage="x")) == ["jobs/illegal-transition"]
    back = job_event(4, "progress", percentage=20.0, stage="x")
    assert job(CREATED, STARTED, job_event(3, "progress", percentage=40.0, stage="x"), back) == [
        "jobs/progress-backwards"
    ]
    done = job_event(3, "completed", status="completed", resultResourceId="r://1")
    assert job(CREATED, STARTED, done, job_event(4, "cancelled", status="cancelled")) == [
        "jobs/after-terminal"
    ]
    other = STARTED | {"params": STARTED["params"] | {"timestamp": "2026-12-02T00:00:09Z"}}
    assert job(CREATED, STARTED, other) == ["jobs/event-id-conflict"]


def test_a_job_first_seen_mid_way_is_taken_as_it_shows() -> None:
    assert (
        job(
            job_event(7, "progress", percentage=70.0, stage="x"),
            job_event(8, "progress", percentage=80.0, stage="y"),
        )
        == []
    )


# -- choosing rules -----------------------------------------------------------------------------


def test_rules_are_chosen_by_id_or_glob() -> None:
    assert select(["jobs/*"]) == {rule for rule in RULES if rule.startswith("jobs/")}
    assert select(ignore=["jobs/*", "mcp/unstable-result-shape"]) == {
        rule for rule in RULES if not rule.startswith("jobs/") and rule != "mcp/unstable-result-shape"
    }
    with pytest.raises(UnknownRule, match="did you mean jsonrpc/id-reused"):
        select(["jsonrpc/id-reuse"])
    log = Log().handshake().client(request(1, "ping")).client(request(1, "ping"))
    assert log.findings(select(ignore=["jsonrpc/*"])) == []


def test_every_rule_has_a_source_and_a_severity() -> None:
    for rule in RULES.values():
        assert rule.severity in ("error", "warning", "note")
        assert rule.source
        assert rule.summary.endswith(".")


def test_the_docs_list_every_rule_with_its_severity() -> None:
    """docs/message-log.md has a row per rule, and the README counts them."""
    table = (REPO / "docs" / "message-log.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z0-9/-]+)` \| (error|warning|note) \|", table, re.MULTILINE))
    assert rows == {rule.id: rule.severity for rule in RULES.values()}
    assert f"checks {len(RULES)} rules" in " ".join((REPO / "README.md").read_text().split())


def test_memories_forget_their_oldest() -> None:
    recent: Recent[int, None] = Recent(3)
    for number in range(6):
        recent[number] = None
    recent.trim()
    assert list(recent) == [0, 1, 2, 3, 4, 5], "up to twice its capacity is kept"
    recent[6] = None
    recent.trim()
    assert list(recent) == [4, 5, 6]


def test_a_long_log_is_read_in_bounded_memory() -> None:
    """Thousands of sessions, each initialized and answered: what is kept stays within its bounds."""
    log = Log("http")
    params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {}}
    result = {"protocolVersion": HANDSHAKE, "capabilities": {}, "serverInfo": {}}
    for number in range(6000):
        log.client(request(0, "initialize", params), session=None, stream=f"post-{number}")
        log.server(answer(0, result), session=f"s{number}", stream=f"post-{number}")
    linter = Linter(lambda finding: None)
    for line_number, line in enumerate(log.lines(), 1):
        linter.feed(line, line_number)
    assert linter.records == 12_000
    assert len(linter.conversations) <= CONVERSATIONS + TRIM_EVERY
