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
checked against the handshake, the capabilities and the progress tokens in flight
(`herald.lint.lifecycle`). What a tools/list taught (`ToolCatalog`) and the job events
(`JobEventRules`) are shared by the whole log, since one server answers every
conversation in it.

The era and version are read from the log: `initialize` and its answer in the handshake
era, `_meta` (or `server/discover`) in 2026-07-28. Memory stays bounded: what the
conversations remember of their past is one `Memory` for the log, the conversations
are forgotten least recently used first, and everything is trimmed every `TRIM_EVERY`
records. A conversation first seen mid-way (the log began after its start, or it was
forgotten) is not judged on what may have come before: its unknown ids are not said.

A million messages must take seconds, so the path every message takes is written for
it: one parse, dict lookups, and no work a message of its kind cannot need.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import orjson

from herald.lint import lifecycle
from herald.lint.bounded import Recent
from herald.lint.conversation import Conversation, Key, Memory, Pending, Phase
from herald.lint.findings import Finding, excerpt
from herald.lint.jobs import PREFIX as JOB_PREFIX
from herald.lint.jobs import JobEventRules
from herald.lint.messages import (
    DEFINED_CODES,
    MODERN_DEFINED_CODES,
    MODERN_FORBIDDEN_CODES,
    REQUEST_METHODS,
    REQUIRED_RESULT_FIELDS,
    STANDARD_NOTIFICATIONS,
    WRONG_PARAM_NAMES,
    result_shape,
    shapes_agree,
)
from herald.lint.rules import RULES
from herald.lint.tools import ToolCatalog
from herald.protocol.versions import BATCH_VERSIONS, MODERN_VERSIONS, PROTOCOL_VERSION_KEY, Era
from herald.wire.format import FORMAT_VERSION
from herald.wire.reader import RECORD_LIMIT

#: Conversations followed at once (the least recently used are forgotten past it).
CONVERSATIONS: Final = 4096
#: How often (in records) the memories are trimmed back to their bounds.
TRIM_EVERY: Final = 4096
_OTHER: Final = {"client": "server", "server": "client"}
_ANSWER_KEYS: Final = ("id", "requestId", "request_id")
_PROGRESS: Final = "notifications/progress"


class Linter:
    """Feed it the log's lines in order (`feed`), then `finish()`; findings go to `on_finding`."""

    def __init__(
        self, on_finding: Callable[[Finding], None], rules: frozenset[str] = frozenset(RULES)
    ) -> None:
        self._emit = on_finding
        self.rules = rules
        self.records = 0
        self.conversations: OrderedDict[str, Conversation] = OrderedDict()
        #: HTTP exchanges with no session (yet): an initialize, or a 2026-07-28 request.
        self._exchanges: Recent[str, Conversation] = Recent(CONVERSATIONS)
        self.tools = ToolCatalog()
        self._jobs = JobEventRules()
        #: What `server/discover` said the server can do (2026-07-28), shared by the log.
        self._modern_server_capabilities: dict[str, Any] | None = None
        #: The first shape of each method's (and tool's) results, and the field names last seen.
        self._shapes: dict[str, Any] = {}
        self._last_fields: dict[str, tuple[Any, ...]] = {}
        self._stdio_count = 0
        self._numbers = 0
        #: What every conversation remembers of its past (one bounded memory for the log).
        self._memory = Memory()
        # Where the record being read stands, for findings.
        self._line = 0
        self._record: dict[str, Any] = {}
        self._conversation: Conversation | None = None
        self._message: Any = None
        self._stream: str | None = None

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
        if not self.records % TRIM_EVERY:
            self._trim()
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as bad:
            self._record = {}
            self.report("log/unreadable-record", f"not JSON: {bad}")
            return
        if type(record) is not dict:
            self._record = {}
            self.report("log/unreadable-record", "a record must be a JSON object")
            return
        self._record = record
        stream = record.get("stream")
        self._stream = stream if type(stream) is str else None
        if record.get("v") != FORMAT_VERSION:
            self.report(
                "log/unreadable-record",
                f"format version {record.get('v')!r}; this linter reads {FORMAT_VERSION}",
            )
            return
        kind = record.get("kind")
        sender = record.get("from")
        if kind == "message" and (sender == "client" or sender == "server"):
            self._messages(record, sender)
        elif kind == "unparsed" and sender in _OTHER:
            self._conversation = self._conversation_of(record)
            self.report(
                "jsonrpc/parse-error",
                f"the {sender} sent bytes that are not JSON: {record.get('parseError')}",
            )
        elif kind == "http" and sender in _OTHER:
            self._http(record, sender)
        elif kind == "end" and sender in _OTHER:
            self._end(record, sender)
        elif kind == "start":
            self._start(record)
        else:
            self.report(
                "log/unreadable-record",
                f"a record of kind {kind!r} from {sender!r} is not one this linter reads",
            )

    def too_long(self, number: int, size: int) -> None:
        """Line `number` of the log, `size` bytes long, was too long to read: it was passed over."""
        self._line, self._message, self._conversation, self._record = number, None, None, {}
        self.report(
            "log/record-too-long",
            f"line {number} is {size:,} bytes, over the limit of {RECORD_LIMIT:,}: too long to check, "
            "so it was passed over unread",
        )

    def _trim(self) -> None:
        """Forget what is oldest wherever memory has grown past its bound."""
        self._memory.trim()
        self._jobs.trim()
        self._exchanges.trim()
        while len(self.conversations) > CONVERSATIONS:
            self.conversations.popitem(last=False)  # the least recently used

    def finish(self) -> None:
        """The log ended. Requests still in flight are not judged: the recording may have stopped first."""

    # -- conversations --------------------------------------------------------------------------

    def _start(self, record: dict[str, Any]) -> None:
        session = record.get("session")
        if record.get("transport") == "stdio":
            self._stdio_count += 1
            name = session if isinstance(session, str) else f"stdio-{self._stdio_count}"
            self.conversations[name] = self._new(name, from_start=True)

    def _new(self, name: str, *, from_start: bool) -> Conversation:
        self._numbers += 1
        return Conversation(name, self._numbers, from_start=from_start)

    def _conversation_of(self, record: dict[str, Any]) -> Conversation:
        session = record.get("session")
        stream = self._stream
        if type(session) is str:
            conversations = self.conversations
            found = conversations.get(session)
            if found is None:
                # The answer that mints a session comes on the exchange of its initialize.
                found = self._exchanges.pop(stream, None) if stream is not None else None
                if found is None:
                    found = self._new(session, from_start=record.get("transport") == "stdio")
                found.name = session
                conversations[session] = found
            else:
                conversations.move_to_end(session)  # the least recently used are forgotten first
            return found
        if stream is not None:
            found = self._exchanges.get(stream)
            if found is None:
                found = self._exchanges[stream] = self._new(stream, from_start=True)
            return found
        name = f"stdio-{self._stdio_count}" if self._stdio_count else "stdio"
        found = self.conversations.get(name)
        if found is None:
            found = self.conversations[name] = self._new(name, from_start=True)
        return found

    # -- messages -----------------------------------------------------------------------------

    def _messages(self, record: dict[str, Any], sender: str) -> None:
        message = record.get("message")
        conversation = self._conversation = self._conversation_of(record)
        self._message = message
        event_id = record.get("eventId")
        if event_id is not None and type(event_id) is str and self._replayed(conversation, event_id, message):
            return
        if type(message) is dict:
            self._one(message, sender, conversation)
            return
        if type(message) is not list:
            kind = type(message).__name__
            self.report("jsonrpc/invalid-message", f"a message must be a JSON object, not {kind}")
            return
        if conversation.version is not None and conversation.version not in BATCH_VERSIONS:
            self.report("jsonrpc/batch", f"a batch of {len(message)} in version {conversation.version}")
        if not message:
            self.report("jsonrpc/invalid-message", "an empty batch")
        for item in message:
            self._message = item
            if type(item) is dict:
                self._one(item, sender, conversation)
            else:
                self.report(
                    "jsonrpc/invalid-message", f"a batch holds a {type(item).__name__}, not a message"
                )

    def _replayed(self, conversation: Conversation, event_id: str, message: Any) -> bool:
        """Whether this SSE event is a repeat (a resumed stream); an id reused otherwise is reported."""
        fingerprint = hash(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
        key = (conversation.number, event_id)
        seen = self._memory.event_ids.get(key)
        if seen is None:
            self._memory.event_ids[key] = fingerprint
            return False
        if seen != fingerprint:
            self.report("http/event-id-reused", f"event id {event_id} was used before for another message")
            return False
        return True

    def _one(self, message: dict[str, Any], sender: str, conversation: Conversation) -> None:
        if message.get("jsonrpc") != "2.0":
            self.report("jsonrpc/invalid-message", f'jsonrpc must be "2.0", not {message.get("jsonrpc")!r}')
        method = message.get("method")
        if method is None:
            if "result" in message or "error" in message:
                self._response(message, sender, conversation)
            else:
                self.report("jsonrpc/invalid-message", "neither a request, a notification nor a response")
            return
        if type(method) is not str:
            self.report("jsonrpc/invalid-message", "method must be a string")
            return
        params = message.get("params")
        if params is not None and type(params) is not dict:
            self.report("jsonrpc/invalid-message", f"params of {method} must be an object")
            params = None
        if "id" in message:
            self._request(message["id"], method, params, sender, conversation)
        else:
            self._notification(method, params, sender, conversation)

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
            said = f"{method} is a notification but carries id {request_id!r}"
            self.report("jsonrpc/notification-with-id", said)
        if type(request_id) is not str and type(request_id) is not int:
            self.report("jsonrpc/id-type", f"{method} has id {request_id!r}; use a string or an integer")
            return
        key: Key = (sender, request_id)
        remembered = (conversation.number, sender, request_id)
        in_flight = conversation.pending
        if key in in_flight:
            self.report(
                "jsonrpc/id-reused", f"{method} reuses id {request_id!r} while the first is in flight"
            )
        elif remembered in self._memory.used and conversation.era is not Era.MODERN:
            self.report("jsonrpc/id-reused", f"{method} reuses id {request_id!r} of an earlier request")
        meta = params.get("_meta") if params is not None else None
        if conversation.era is None:
            self._era(method, meta, conversation)
        if conversation.era is Era.HANDSHAKE:
            lifecycle.handshake_request(method, params, sender, conversation, self.report)
        elif sender == "client":
            self._modern_request(method, params, conversation)
        wrong = WRONG_PARAM_NAMES.get(method)
        if wrong is not None and params is not None:
            self._param_names(method, params, *wrong)
        token = meta.get("progressToken") if type(meta) is dict else None
        if method == "tools/call" and params is not None:
            tool, arguments = params.get("name"), params.get("arguments")
            pending = Pending(method, self._line, self._stream, tool, arguments, token, "task" in params)
            if type(tool) is str:
                self.tools.check_arguments(tool, arguments, self.report)
        else:
            pending = Pending(method, self._line, self._stream, token=token)
        if token is not None:
            conversation.tokens[token] = [key, None]
            if len(conversation.tokens) > 2 * conversation.tokens.capacity:
                conversation.tokens.trim()
        in_flight[key] = pending
        if len(in_flight) > 2 * in_flight.capacity:
            in_flight.trim()
        self._memory.used[remembered] = None

    def _era(self, method: str, meta: Any, conversation: Conversation) -> None:
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

    def _modern_request(self, method: str, params: dict[str, Any] | None, conversation: Conversation) -> None:
        http = self._record.get("http")
        headers = (
            http.get("headers") if type(http) is dict and self._record.get("transport") == "http" else None
        )
        name = params.get("name") if method == "tools/call" and params else None
        tool = self.tools.tools.get(name) if type(name) is str else None
        lifecycle.modern_request(
            method,
            params,
            conversation,
            headers,
            tool.input_schema if tool is not None else None,
            self._modern_server_capabilities,
            self.report,
        )

    def _param_names(
        self, method: str, params: dict[str, Any], right: tuple[str, ...], wrong: dict[str, str]
    ) -> None:
        if right[0] in params and wrong.keys().isdisjoint(params):
            return
        found = [f"{name!r} (the field is {wrong[name]!r})" for name in params if name in wrong]
        missing = [name for name in right if name not in params]
        said = "; ".join(found) if found else f"no {', '.join(repr(name) for name in missing)}"
        self.report("mcp/wrong-param-names", f"{method} params: {said}")

    # -- responses ----------------------------------------------------------------------------

    def _response(self, message: dict[str, Any], sender: str, conversation: Conversation) -> None:
        has_result = "result" in message
        has_error = "error" in message
        if has_error:
            if has_result:
                self.report("jsonrpc/result-and-error", "the response sets both result and error")
            self._error_code(message["error"], conversation)
        request_id = message.get("id")
        if request_id is None:
            if not has_result:
                return  # an error about a request whose id could not be read
            self.report("jsonrpc/response-without-id", "a result with no id answers nothing")
            self._orphan_answer(sender, conversation)
            return
        requester = _OTHER[sender]
        key: Key = (requester, request_id)
        remembered = (conversation.number, requester, request_id)
        pending = conversation.pending.pop(key, None)
        if pending is None:
            if not conversation.from_start:
                return  # joined mid-way (or forgotten): its request may well be before the log
            twice = remembered in self._memory.answered
            said = "was answered already" if twice else "matches no request in flight"
            self.report("jsonrpc/unknown-id", f"a response to id {request_id!r}, which {said}")
            return
        memory = self._memory
        memory.answered[remembered] = None
        if pending.token is not None:
            conversation.tokens.pop(pending.token, None)
            memory.ended_tokens[(conversation.number, pending.token)] = None
        if remembered in memory.cancelled:
            said = f"{pending.method} #{request_id} was answered after it was cancelled"
            self.report("mcp/answered-after-cancel", said)
        stream = self._stream
        if stream is not None and conversation.get_streams.get(stream) is False:
            said = f"the answer to {pending.method} #{request_id} came on {stream}"
            self.report("http/response-on-get-stream", said)
        if not has_result:
            error = message["error"]
            if pending.method == "tools/call" and type(error) is dict:
                self.tools.check_error(pending.tool, pending.arguments, error, self.report)
            return
        result = message["result"]
        if type(result) is not dict:
            self.report("jsonrpc/invalid-message", f"the result of {pending.method} must be an object")
            return
        self._result(pending, result, conversation)
        if conversation.name == stream and not conversation.pending:
            self._exchanges.pop(stream, None)  # a 2026-07-28 exchange, answered: nothing more to pair

    def _orphan_answer(self, sender: str, conversation: Conversation) -> None:
        """A result without its id most likely answers the one request of this exchange still in
        flight: take that one as answered, so it is not reported a second time as unanswered."""
        waiting = [
            key
            for key, pending in conversation.pending.items()
            if key[0] == _OTHER[sender] and pending.stream == self._stream
        ]
        if len(waiting) == 1:
            del conversation.pending[waiting[0]]

    def _error_code(self, error: Any, conversation: Conversation) -> None:
        if type(error) is not dict or type(error.get("message")) is not str:
            self.report("jsonrpc/invalid-message", "an error must be an object with a code and a message")
        code = error.get("code") if type(error) is dict else None
        if type(code) is not int:
            self.report("jsonrpc/error-code", f"error code {code!r} is not an integer")
            return
        if not -32768 <= code <= -32000:
            return  # outside the reserved range: the application's own
        if conversation.era is Era.MODERN:
            if code in MODERN_FORBIDDEN_CODES:
                self.report("jsonrpc/error-code", f"error code {code} must not be sent in 2026-07-28")
            elif -32099 <= code <= -32020 and code not in MODERN_DEFINED_CODES:
                said = f"error code {code} is reserved for the MCP specification, which defines no such code"
                self.report("jsonrpc/error-code", said)
                return
        if code not in DEFINED_CODES and not -32099 <= code <= -32000:
            self.report("jsonrpc/error-code", f"error code {code} is reserved by JSON-RPC and not defined")

    def _result(self, pending: Pending, result: dict[str, Any], conversation: Conversation) -> None:
        method = pending.method
        if method == "tools/call":
            if pending.task or "task" in result:
                return  # a task was created: its result is not the tool's
            self.tools.check_result(pending.tool, result, self.report)
            if result.get("isError") is True:
                return  # a tool's failure: `tools/is-error-without-content` has said what it lacks
        elif method == "initialize":
            lifecycle.initialized(result, conversation)
        elif method == "server/discover":
            capabilities = result.get("capabilities")
            self._modern_server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        elif method == "tools/list":
            self.tools.learn(result)
        if result.get("resultType", "complete") != "complete":
            return  # 2026-07-28 asks for input: not the method's own result
        required = REQUIRED_RESULT_FIELDS.get(method)
        if required is not None:
            for name in required:
                if name not in result:
                    missing = ", ".join(field for field in required if field not in result)
                    self.report("mcp/result-missing-field", f"the result of {method} lacks {missing}")
                    break
        self._stable_shape(method if method != "tools/call" else f"tools/call {pending.tool}", result)

    def _stable_shape(self, name: str, result: dict[str, Any]) -> None:
        structured = result.get("structuredContent")
        fields = (*result, *structured) if type(structured) is dict else (*result, type(structured))
        if self._last_fields.get(name) == fields:
            return  # the same fields as last time: the same shape
        self._last_fields[name] = fields
        shape = result_shape(result)
        first = self._shapes.setdefault(name, shape)
        if not shapes_agree(first, shape):
            self.report("mcp/unstable-result-shape", f"{name} answered {shape} after answering {first}")

    # -- notifications ------------------------------------------------------------------------

    def _notification(
        self, method: str, params: dict[str, Any] | None, sender: str, conversation: Conversation
    ) -> None:
        ready = conversation.phase is Phase.READY or conversation.era is Era.MODERN
        if method in REQUEST_METHODS:
            said = f"{method} is a request but has no id: nobody will answer it"
            self.report("jsonrpc/request-without-id", said)
            return
        if method == _PROGRESS:
            self._progress(params, conversation)
            if ready:
                return  # the bulk of all traffic: nothing more to check once the handshake is done
        elif method.startswith(JOB_PREFIX):
            self._jobs.check(method, params, self.report)
            if ready:
                return
        elif method == "notifications/cancelled":
            self._cancelled(params, sender, conversation)
        lifecycle.notification(method, sender, conversation, self._modern_server_capabilities, self.report)
        if (
            sender == "server"
            and params is not None
            and method not in STANDARD_NOTIFICATIONS
            and not method.startswith(JOB_PREFIX)
        ):
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
            if key in conversation.pending or (conversation.number, *key) in self._memory.answered:
                said = f"{method} refers to request {value!r}: answer in its response"
                self.report("mcp/notification-as-answer", said)
                return

    def _progress(self, params: dict[str, Any] | None, conversation: Conversation) -> None:
        token = params.get("progressToken") if params is not None else None
        following = conversation.tokens.get(token) if token is not None else None
        if following is None:
            if (conversation.number, token) in self._memory.ended_tokens:
                said = f"progress for token {token!r} after its request was answered"
                self.report("progress/after-response", said)
            else:
                said = f"progress for token {token!r}, which no request in flight gave"
                self.report("progress/unknown-token", said)
            return
        progress = params.get("progress") if params is not None else None
        if type(progress) is not int and type(progress) is not float:
            return
        last = following[1]
        if last is not None and progress <= last:
            self.report("progress/backwards", f"progress {progress:g} after {last:g} for token {token!r}")
        following[1] = progress if last is None else max(progress, last)

    def _cancelled(self, params: dict[str, Any] | None, sender: str, conversation: Conversation) -> None:
        request_id = params.get("requestId") if params is not None else None
        pending = conversation.pending.get((sender, request_id))
        if pending is not None:
            self._memory.cancelled[(conversation.number, sender, request_id)] = None
            if pending.method == "initialize":
                self.report("mcp/cancelled-initialize", "the client cancelled its initialize request")

    # -- HTTP steps and endings -----------------------------------------------------------------

    def _http(self, record: dict[str, Any], sender: str) -> None:
        http = record.get("http")
        stream = self._stream
        session = record.get("session")
        if sender != "client" or type(http) is not dict or stream is None or type(session) is not str:
            return
        if http.get("method") == "DELETE":
            self.conversations.pop(session, None)  # the session ends: nothing more to pair
        elif http.get("method") == "GET":
            headers = http.get("headers")
            resuming = isinstance(headers, dict) and "last-event-id" in headers
            conversation = self._conversation_of(record)
            conversation.get_streams[stream] = resuming
            conversation.get_streams.trim()

    def _end(self, record: dict[str, Any], sender: str) -> None:
        """A stream or connection ended: what it still owed is unanswered, unless the client left."""
        conversation = self._conversation = self._conversation_of(record)
        stream = self._stream
        if sender == "server" and record.get("reason") not in ("client left", "cut short"):
            owed = [
                key
                for key, pending in conversation.pending.items()
                if key[0] == "client" and (stream is None or pending.stream == stream)
            ]
            for key in owed:
                pending = conversation.pending.pop(key)
                said = f"{pending.method} #{key[1]!r} (line {pending.line}) was never answered"
                self.report("jsonrpc/unanswered", said)
        if stream is not None:
            self._exchanges.pop(stream, None)
            conversation.get_streams.pop(stream, None)
        elif sender == "server":  # a stdio server exited: its connection is over
            self.conversations.pop(conversation.name, None)

    def _header(self, name: str) -> str | None:
        http = self._record.get("http")
        headers = http.get("headers") if isinstance(http, dict) else None
        value = headers.get(name) if isinstance(headers, dict) else None
        return value if isinstance(value, str) else None
