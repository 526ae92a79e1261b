"""The linter: reads a message log once, front to back, and reports each rule a message breaks.

Theory of operation
-------------------
Every record belongs to a conversation: its `session` (a stdio connection, or an HTTP
session), or, where HTTP has none yet, its exchange (`stream`). An `initialize` is
posted before its session exists, so its exchange is held apart until the answer names
the session, and then becomes that session's conversation; a 2026-07-28 exchange stays
one conversation of its own and is forgotten once answered.

Each message is classified as JSON-RPC says (request, notification, response) and
checked where it stands: requests are registered in flight under (requester, id),
responses are paired with them and checked against what was asked, notifications are
checked against the handshake, the capabilities and the progress tokens in flight.
What a tools/list taught (`ToolCatalog`) and the job events (`JobEventRules`) are
shared by the whole log, since one server answers every conversation in it.

The era and version are read from the log: `initialize` and its answer in the handshake
era, `_meta` (or `server/discover`) in 2026-07-28. Memory stays bounded: every memory
that would grow with the log is a `Recent`, and conversations themselves are too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from herald.lint.bounded import Recent
from herald.lint.conversation import Conversation, Era, Key, Pending, Phase
from herald.lint.findings import Finding, excerpt
from herald.lint.jobs import PREFIX as JOB_PREFIX
from herald.lint.jobs import JobEventRules
from herald.lint.messages import (
    CLIENT_CAPABILITY,
    DEFINED_CODES,
    LIST_CHANGED,
    MODERN_DEFINED_CODES,
    MODERN_FORBIDDEN_CODES,
    NOTIFICATION_CAPABILITY,
    REQUIRED_RESULT_FIELDS,
    SERVER_CAPABILITY,
    STANDARD_NOTIFICATIONS,
    WRONG_PARAM_NAMES,
    has_capability,
    result_shape,
    shapes_agree,
)
from herald.lint.rules import RULES
from herald.lint.tools import ToolCatalog
from herald.protocol.errors import ProtocolError
from herald.protocol.http import check_modern_headers
from herald.protocol.modern import read_envelope
from herald.protocol.versions import BATCH_VERSIONS, MODERN_VERSIONS, PROTOCOL_VERSION_KEY

#: Conversations followed at once (the least recently started are forgotten past it).
CONVERSATIONS: Final = 16_384
FORMAT_VERSION: Final = 1
_OTHER: Final = {"client": "server", "server": "client"}
_ANSWER_KEYS: Final = ("id", "requestId", "request_id")


class Linter:
    """Feed it the log's lines in order (`feed`), then `finish()`; findings go to `on_finding`."""

    def __init__(
        self, on_finding: Callable[[Finding], None], rules: frozenset[str] = frozenset(RULES)
    ) -> None:
        self._emit = on_finding
        self.rules = rules
        self.records = 0
        self.conversations: Recent[str, Conversation] = Recent(CONVERSATIONS)
        #: HTTP exchanges with no session (yet): an initialize, or a 2026-07-28 request.
        self._exchanges: Recent[str, Conversation] = Recent(CONVERSATIONS)
        self.tools = ToolCatalog()
        self._jobs = JobEventRules()
        #: What `server/discover` said the server can do (2026-07-28), shared by the log.
        self._modern_server_capabilities: dict[str, Any] | None = None
        self._shapes: dict[str, Any] = {}
        self._stdio_count = 0
        # Where the record being read stands, for findings.
        self._line = 0
        self._record: dict[str, Any] = {}
        self._conversation: Conversation | None = None
        self._message: Any = None

    # -- reporting ----------------------------------------------------------------------------

    def report(self, rule_id: str, message: str) -> None:
        """Say that the current message breaks `rule_id` (if that rule was chosen)."""
        if rule_id not in self.rules:
            return
        quoted = None
        if self._message is not None:
            quoted = excerpt(orjson.dumps(self._message).decode("utf-8", errors="replace"))
        conversation = self._conversation.name if self._conversation is not None else None
        self._emit(Finding(rule_id, self._line, message, quoted, conversation, self._record.get("time")))

    # -- records ------------------------------------------------------------------------------

    def feed(self, line: bytes, number: int) -> None:
        """Read one line of the log (`number` counts from 1)."""
        self._line, self._message, self._conversation = number, None, None
        self.records += 1
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as bad:
            self._record = {}
            self.report("log/unreadable-record", f"not JSON: {bad}")
            return
        if not isinstance(record, dict):
            self._record = {}
            self.report("log/unreadable-record", "a record must be a JSON object")
            return
        self._record = record
        if record.get("v") != FORMAT_VERSION:
            self.report("log/unreadable-record", f"format version {record.get('v')!r}; this linter reads 1")
            return
        kind = record.get("kind")
        sender = record.get("from")
        if kind == "message" and sender in _OTHER:
            self._messages(record.get("message"), sender)
        elif kind == "unparsed" and sender in _OTHER:
            self._conversation = self._conversation_of(record)
            self.report(
                "jsonrpc/parse-error",
                f"the {sender} sent bytes that are not JSON: {record.get('parseError')}",
            )
        elif kind == "http" and sender in _OTHER:
            self._http(record, sender)
        elif kind == "end" and sender in _OTHER:
            self._end(record)
        elif kind == "start":
            self._start(record)
        else:
            self.report(
                "log/unreadable-record",
                f"a record of kind {kind!r} from {sender!r} is not one this linter reads",
            )

    def finish(self) -> None:
        """The log ended. Requests still in flight are not judged: the recording may have stopped first."""

    def _start(self, record: dict[str, Any]) -> None:
        session = record.get("session")
        if record.get("transport") == "stdio":
            self._stdio_count += 1
            name = session if isinstance(session, str) else f"stdio-{self._stdio_count}"
            self.conversations[name] = Conversation(name, from_start=True)

    def _conversation_of(self, record: dict[str, Any]) -> Conversation:
        session = record.get("session")
        stream = record.get("stream")
        if isinstance(session, str):
            found = self.conversations.get(session)
            if found is None:
                # The answer that mints a session comes on the exchange of its initialize.
                found = self._exchanges.pop(stream, None) if isinstance(stream, str) else None
                if found is None:
                    found = Conversation(session, from_start=record.get("transport") == "stdio")
                found.name = session
                self.conversations[session] = found
            return found
        if isinstance(stream, str):
            found = self._exchanges.get(stream)
            if found is None:
                found = self._exchanges[stream] = Conversation(stream, from_start=True)
            return found
        name = f"stdio-{self._stdio_count}" if self._stdio_count else "stdio"
        found = self.conversations.get(name)
        if found is None:
            found = self.conversations[name] = Conversation(name, from_start=True)
        return found

    # -- messages -----------------------------------------------------------------------------

    def _messages(self, message: Any, sender: str) -> None:
        conversation = self._conversation = self._conversation_of(self._record)
        self._message = message
        event_id = self._record.get("eventId")
        if isinstance(event_id, str) and self._replayed(conversation, event_id, message):
            return
        if isinstance(message, list):
            if conversation.version is not None and conversation.version not in BATCH_VERSIONS:
                self.report("jsonrpc/batch", f"a batch of {len(message)} in version {conversation.version}")
            if not message:
                self.report("jsonrpc/invalid-message", "an empty batch")
            for item in message:
                self._message = item
                self._one(item, sender, conversation)
            return
        self._one(message, sender, conversation)

    def _replayed(self, conversation: Conversation, event_id: str, message: Any) -> bool:
        """Whether this SSE event is a repeat (a resumed stream); an id reused otherwise is reported."""
        fingerprint = hash(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
        seen = conversation.event_ids.get(event_id)
        if seen is None:
            conversation.event_ids[event_id] = fingerprint
            return False
        if seen != fingerprint:
            self.report("http/event-id-reused", f"event id {event_id} was used before for another message")
            return False
        return True

    def _one(self, message: Any, sender: str, conversation: Conversation) -> None:
        if not isinstance(message, dict):
            self.report(
                "jsonrpc/invalid-message", f"a message must be a JSON object, not {type(message).__name__}"
            )
            return
        if message.get("jsonrpc") != "2.0":
            self.report("jsonrpc/invalid-message", f'jsonrpc must be "2.0", not {message.get("jsonrpc")!r}')
        method = message.get("method")
        if method is not None:
            if not isinstance(method, str):
                self.report("jsonrpc/invalid-message", "method must be a string")
                return
            params = message.get("params")
            if params is not None and not isinstance(params, dict):
                self.report("jsonrpc/invalid-message", f"params of {method} must be an object")
                params = None
            if "id" in message:
                self._request(message["id"], method, params, sender, conversation)
            else:
                self._notification(method, params, sender, conversation)
        elif "result" in message or "error" in message:
            self._response(message, sender, conversation)
        else:
            self.report("jsonrpc/invalid-message", "neither a request, a notification nor a response")

    # -- requests -----------------------------------------------------------------------------

    def _request(
        self,
        request_id: Any,
        method: str,
        params: dict[str, Any] | None,
        sender: str,
        conversation: Conversation,
    ) -> None:
        if method.startswith("notifications/"):
            self.report(
                "jsonrpc/notification-with-id", f"{method} is a notification but carries id {request_id!r}"
            )
        if type(request_id) is not str and type(request_id) is not int:
            self.report("jsonrpc/id-type", f"{method} has id {request_id!r}; use a string or an integer")
            return
        key: Key = (sender, request_id)
        if key in conversation.pending:
            self.report(
                "jsonrpc/id-reused", f"{method} reuses id {request_id!r} while the first is in flight"
            )
        elif key in conversation.used and conversation.era is not Era.MODERN:
            self.report("jsonrpc/id-reused", f"{method} reuses id {request_id!r} of an earlier request")
        meta = params.get("_meta") if params is not None else None
        self._era(method, meta, conversation)
        if conversation.era is Era.HANDSHAKE:
            self._handshake_request(method, params, sender, conversation)
        elif conversation.era is Era.MODERN and sender == "client":
            self._modern_request(method, params, conversation)
        wrong = WRONG_PARAM_NAMES.get(method)
        if wrong is not None and params is not None:
            self._param_names(method, params, *wrong)
        pending = Pending(method, self._line, self._record.get("stream"))
        if method == "tools/call" and params is not None:
            pending.tool, pending.arguments = params.get("name"), params.get("arguments")
            pending.task = "task" in params
            if isinstance(pending.tool, str):
                self.tools.check_arguments(pending.tool, pending.arguments, self.report)
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is not None:
            pending.token = token
            conversation.tokens[token] = [key, None]
        conversation.pending[key] = pending
        conversation.used[key] = None

    def _era(self, method: str, meta: Any, conversation: Conversation) -> None:
        if conversation.era is not None:
            return
        header = self._header("mcp-protocol-version")
        modern = method == "server/discover" or (isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta)
        if modern or (
            header in MODERN_VERSIONS and self._record.get("session") is None and method != "initialize"
        ):
            conversation.era = Era.MODERN
            version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else header
            conversation.version = version if isinstance(version, str) else None
        else:
            conversation.era = Era.HANDSHAKE

    def _handshake_request(
        self, method: str, params: dict[str, Any] | None, sender: str, conversation: Conversation
    ) -> None:
        phase = conversation.phase
        if sender == "client":
            if method == "initialize":
                if phase is Phase.NEW:
                    conversation.phase = Phase.INITIALIZING
                    capabilities = params.get("capabilities") if params is not None else None
                    conversation.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
                return
            if phase is Phase.NEW and conversation.from_start and not conversation.said_not_first:
                conversation.said_not_first = True
                self.report("lifecycle/initialize-not-first", f"{method} came before any initialize")
            elif phase is Phase.INITIALIZING and method != "ping":
                self.report(
                    "lifecycle/before-initialize-result", f"{method} was sent before initialize was answered"
                )
            elif phase is Phase.ANSWERED and method != "ping":
                self.report(
                    "lifecycle/before-initialized", f"{method} was sent before notifications/initialized"
                )
            self._uses(SERVER_CAPABILITY.get(method), conversation.server_capabilities, method, "server")
        else:
            if phase < Phase.READY and method != "ping":
                self.report(
                    "lifecycle/before-initialized",
                    f"the server sent {method} before notifications/initialized",
                )
            self._uses(CLIENT_CAPABILITY.get(method), conversation.client_capabilities, method, "client")

    def _modern_request(self, method: str, params: dict[str, Any] | None, conversation: Conversation) -> None:
        try:
            envelope = read_envelope(method, params)
        except ProtocolError as refused:
            self.report("modern/missing-meta", refused.message)
            return
        conversation.version = envelope.version
        conversation.client_capabilities = dict(envelope.client_capabilities)
        headers = (
            self._record.get("http", {}).get("headers")
            if isinstance(self._record.get("http"), dict)
            else None
        )
        if isinstance(headers, dict) and self._record.get("transport") == "http":
            name = params.get("name") if method == "tools/call" and params else None
            tool = self.tools.tools.get(name) if isinstance(name, str) else None
            try:
                check_modern_headers(
                    headers, method, params or {}, envelope.version, tool and tool.input_schema
                )
            except ProtocolError as mismatch:
                self.report("modern/header-mismatch", mismatch.message)
        self._uses(SERVER_CAPABILITY.get(method), self._modern_server_capabilities, method, "server")

    def _uses(
        self, needed: tuple[str, ...] | None, declared: dict[str, Any] | None, method: str, side: str
    ) -> None:
        if needed is not None and declared is not None and not has_capability(declared, needed):
            self.report("capabilities/undeclared", f"{method} needs the {side} capability {'.'.join(needed)}")

    def _param_names(
        self, method: str, params: dict[str, Any], right: tuple[str, ...], wrong: dict[str, str]
    ) -> None:
        found = [f"{name!r} (the field is {wrong[name]!r})" for name in params if name in wrong]
        missing = [name for name in right if name not in params]
        if found or (missing and right[0] in missing):
            said = "; ".join(found) if found else f"no {', '.join(repr(name) for name in missing)}"
            self.report("mcp/wrong-param-names", f"{method} params: {said}")

    # -- responses ----------------------------------------------------------------------------

    def _response(self, message: dict[str, Any], sender: str, conversation: Conversation) -> None:
        error = message.get("error")
        has_result = "result" in message
        if has_result and "error" in message:
            self.report("jsonrpc/result-and-error", "the response sets both result and error")
        if "error" in message:
            self._error_code(error, conversation)
        request_id = message.get("id")
        if request_id is None:
            if not has_result and "error" in message:
                return  # an error about a request whose id could not be read
            self.report("jsonrpc/response-without-id", "a result with no id answers nothing")
            self._orphan_answer(sender, conversation)
            return
        key: Key = (_OTHER[sender], request_id)
        pending = conversation.pending.pop(key, None)
        if pending is None:
            twice = key in conversation.answered
            said = "was answered already" if twice else "matches no request in flight"
            self.report("jsonrpc/unknown-id", f"a response to id {request_id!r}, which {said}")
            return
        conversation.answered[key] = None
        if pending.token is not None:
            conversation.tokens.pop(pending.token, None)
            conversation.ended_tokens[pending.token] = None
        if key in conversation.cancelled:
            self.report(
                "mcp/answered-after-cancel",
                f"{pending.method} #{request_id} was answered after it was cancelled",
            )
        stream = self._record.get("stream")
        if isinstance(stream, str) and conversation.get_streams.get(stream) is False:
            self.report(
                "http/response-on-get-stream",
                f"the answer to {pending.method} #{request_id} came on {stream}",
            )
        if "error" in message and not has_result:
            if pending.method == "tools/call" and isinstance(error, dict):
                self.tools.check_error(pending.tool, pending.arguments, error.get("code"), self.report)
            return
        result = message.get("result")
        if not isinstance(result, dict):
            self.report("jsonrpc/invalid-message", f"the result of {pending.method} must be an object")
            return
        self._result(pending, result, conversation)
        if conversation.name == stream and not conversation.pending:
            self._exchanges.pop(stream, None)  # a 2026-07-28 exchange, answered: nothing more to pair

    def _orphan_answer(self, sender: str, conversation: Conversation) -> None:
        """A result without its id most likely answers the one request of this exchange still in
        flight: take that one as answered, so it is not reported a second time as unanswered."""
        stream = self._record.get("stream")
        waiting = [
            key
            for key, pending in conversation.pending.items()
            if key[0] == _OTHER[sender] and pending.stream == stream
        ]
        if len(waiting) == 1:
            del conversation.pending[waiting[0]]

    def _error_code(self, error: Any, conversation: Conversation) -> None:
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            self.report("jsonrpc/invalid-message", "an error must be an object with a code and a message")
        code = error.get("code") if isinstance(error, dict) else None
        if type(code) is not int:
            self.report("jsonrpc/error-code", f"error code {code!r} is not an integer")
            return
        modern = conversation.era is Era.MODERN
        if modern and code in MODERN_FORBIDDEN_CODES:
            self.report("jsonrpc/error-code", f"error code {code} must not be sent in 2026-07-28")
        elif modern and -32099 <= code <= -32020 and code not in MODERN_DEFINED_CODES:
            self.report(
                "jsonrpc/error-code",
                f"error code {code} is reserved for the MCP specification, which defines no such code",
            )
        elif -32768 <= code <= -32000 and code not in DEFINED_CODES and not -32099 <= code <= -32000:
            self.report("jsonrpc/error-code", f"error code {code} is reserved by JSON-RPC and not defined")

    def _result(self, pending: Pending, result: dict[str, Any], conversation: Conversation) -> None:
        method = pending.method
        if method == "initialize":
            if conversation.phase is Phase.INITIALIZING:
                conversation.phase = Phase.ANSWERED
                version, capabilities = result.get("protocolVersion"), result.get("capabilities")
                conversation.version = version if isinstance(version, str) else None
                conversation.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        elif method == "server/discover":
            capabilities = result.get("capabilities")
            self._modern_server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        elif method == "tools/list":
            self.tools.learn(result)
        elif method == "tools/call" and not pending.task and "task" not in result:
            self.tools.check_result(pending.tool, result, self.report)
        if result.get("resultType", "complete") != "complete" or pending.task or "task" in result:
            return  # 2026-07-28 asks for input, or a task was created: not the method's own result
        if result.get("isError") is True:
            return  # a tool's failure: `tools/is-error-without-content` has said what it lacks
        required = REQUIRED_RESULT_FIELDS.get(method)
        if required is not None:
            missing = [name for name in required if name not in result]
            if missing:
                self.report("mcp/result-missing-field", f"the result of {method} lacks {', '.join(missing)}")
        self._stable_shape(method if method != "tools/call" else f"tools/call {pending.tool}", result)

    def _stable_shape(self, name: str, result: dict[str, Any]) -> None:
        shape = result_shape(result)
        first = self._shapes.setdefault(name, shape)
        if not shapes_agree(first, shape):
            self.report("mcp/unstable-result-shape", f"{name} answered {shape} after answering {first}")

    # -- notifications ------------------------------------------------------------------------

    def _notification(
        self, method: str, params: dict[str, Any] | None, sender: str, conversation: Conversation
    ) -> None:
        if method.startswith(JOB_PREFIX):
            self._jobs.check(method, params, self.report)
        elif method == "notifications/progress":
            self._progress(params, conversation)
        elif method == "notifications/cancelled":
            self._cancelled(params, sender, conversation)
        elif method == "notifications/initialized" and sender == "client":
            if conversation.phase is Phase.ANSWERED:
                conversation.phase = Phase.READY
            return
        if sender == "server":
            self._server_notification(method, params, conversation)
        elif (needed := NOTIFICATION_CAPABILITY.get(method)) is not None:
            self._uses(needed, conversation.client_capabilities, method, "client")

    def _server_notification(
        self, method: str, params: dict[str, Any] | None, conversation: Conversation
    ) -> None:
        era = conversation.era
        if (
            era is Era.HANDSHAKE
            and conversation.phase < Phase.READY
            and method
            not in (
                "notifications/message",
                "notifications/progress",
            )
        ):
            self.report(
                "lifecycle/before-initialized", f"the server sent {method} before notifications/initialized"
            )
        declared = (
            conversation.server_capabilities if era is not Era.MODERN else self._modern_server_capabilities
        )
        needed = LIST_CHANGED.get(method)
        if needed is not None:
            if declared is not None and not has_capability(declared, needed):
                self.report(
                    "capabilities/list-changed-undeclared",
                    f"{method} without the capability {'.'.join(needed)}",
                )
        elif (needed := NOTIFICATION_CAPABILITY.get(method)) is not None:
            self._uses(needed, declared, method, "server")
        if method not in STANDARD_NOTIFICATIONS and not method.startswith(JOB_PREFIX) and params is not None:
            self._answer_in_notification(method, params, conversation)

    def _answer_in_notification(
        self, method: str, params: dict[str, Any], conversation: Conversation
    ) -> None:
        if "result" in params:
            self.report(
                "mcp/notification-as-answer", f"{method} carries a result: answer in the response instead"
            )
            return
        for name in _ANSWER_KEYS:
            value = params.get(name)
            if value is None or isinstance(value, bool) or not isinstance(value, str | int):
                continue
            key: Key = ("client", value)
            if key in conversation.pending or key in conversation.answered:
                self.report(
                    "mcp/notification-as-answer",
                    f"{method} refers to request {value!r}: answer in its response",
                )
                return

    def _progress(self, params: dict[str, Any] | None, conversation: Conversation) -> None:
        token = params.get("progressToken") if params is not None else None
        progress = params.get("progress") if params is not None else None
        following = conversation.tokens.get(token) if token is not None else None
        if following is None:
            if token in conversation.ended_tokens:
                self.report(
                    "progress/after-response", f"progress for token {token!r} after its request was answered"
                )
            else:
                self.report(
                    "progress/unknown-token", f"progress for token {token!r}, which no request in flight gave"
                )
            return
        last = following[1]
        if isinstance(progress, int | float) and not isinstance(progress, bool):
            if last is not None and progress <= last:
                self.report("progress/backwards", f"progress {progress:g} after {last:g} for token {token!r}")
            following[1] = progress if last is None else max(progress, last)

    def _cancelled(self, params: dict[str, Any] | None, sender: str, conversation: Conversation) -> None:
        request_id = params.get("requestId") if params is not None else None
        key: Key = (sender, request_id)
        pending = conversation.pending.get(key)
        if pending is not None:
            conversation.cancelled[key] = None
            if pending.method == "initialize":
                self.report("mcp/cancelled-initialize", "the client cancelled its initialize request")

    # -- HTTP steps and endings -----------------------------------------------------------------

    def _http(self, record: dict[str, Any], sender: str) -> None:
        http = record.get("http")
        stream = record.get("stream")
        if sender != "client" or not isinstance(http, dict) or not isinstance(stream, str):
            return
        if http.get("method") == "GET" and isinstance(record.get("session"), str):
            headers = http.get("headers")
            resuming = isinstance(headers, dict) and "last-event-id" in headers
            self._conversation_of(record).get_streams[stream] = resuming

    def _end(self, record: dict[str, Any]) -> None:
        """A stream or connection ended: what it still owed is unanswered, unless the client left."""
        conversation = self._conversation = self._conversation_of(record)
        stream = record.get("stream")
        if record.get("from") != "server" or record.get("reason") in ("client left", "cut short"):
            owed: list[Key] = []
        else:
            owed = [
                key
                for key, pending in conversation.pending.items()
                if key[0] == "client" and (stream is None or pending.stream == stream)
            ]
        for key in owed:
            pending = conversation.pending.pop(key)
            self.report(
                "jsonrpc/unanswered", f"{pending.method} #{key[1]!r} (line {pending.line}) was never answered"
            )
        if isinstance(stream, str):
            self._exchanges.pop(stream, None)
            conversation.get_streams.pop(stream, None)

    def _header(self, name: str) -> str | None:
        http = self._record.get("http")
        headers = http.get("headers") if isinstance(http, dict) else None
        value = headers.get(name) if isinstance(headers, dict) else None
        return value if isinstance(value, str) else None
