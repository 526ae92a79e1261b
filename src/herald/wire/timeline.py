"""`herald log view`: a message log as a timeline people can read, or as a sequence diagram.

Each record becomes one line: when (from the log's first record), which conversation,
which way, and what it is (a request with its method and what it names, a result or an
error with the request it answers and how long that took, a notification with what it
says). Responses are paired with their requests by the requester and the id within the
HTTP exchange or stdio connection they travel on, as the protocol pairs them.

`--mermaid` draws one conversation as a Mermaid sequence diagram, the way MCP
exchanges are drawn in the specification and in talks about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import orjson

from herald.wire.reader import Record, records

_ARROW: Final = {"client": "client → server", "server": "server → client"}
_OTHER: Final = {"client": "server", "server": "client"}


@dataclass(frozen=True, slots=True)
class Step:
    """One line of the timeline."""

    line: int
    seconds: float  # since the log's first record
    conversation: str
    sender: str  # client, server or recorder
    kind: str  # request, result, error, notification, http, unparsed, end, start, unreadable
    text: str
    #: For a response: how long after its request it came, in milliseconds.
    latency_ms: float | None = None


def steps(lines: Iterable[bytes]) -> Iterator[Step]:
    """The timeline of a log, one step a record, responses paired with their requests."""
    sent: dict[tuple[str, str, Any], tuple[float, str]] = {}
    sessions: dict[str, str] = {}  # HTTP exchange -> the session its answer named
    first: float | None = None
    for record in records(lines):
        if record.problem is not None:
            yield Step(record.line, 0.0, "", "recorder", "unreadable", record.problem)
            continue
        at = _seconds(record.time)
        first = at if first is None else first
        stream, session = record.stream, record.session
        if stream is not None and session is not None:
            sessions[stream] = session
        if session is None and stream is None:
            conversation = "stdio" if record.fields.get("transport") == "stdio" else ""
        else:
            conversation = session or sessions.get(stream or "", stream or "")
        for kind, text, pair in _describe(record):
            latency = None
            if pair is not None:
                channel = stream or conversation
                requester, request_id, method = pair
                if kind == "request":
                    sent[(channel, requester, _key(request_id))] = (at, method)
                else:
                    found = sent.pop((channel, requester, _key(request_id)), None)
                    if found is not None:
                        latency = (at - found[0]) * 1000
                        text = f"{text} to {found[1]}"
            yield Step(record.line, at - first, conversation, record.sender, kind, text, latency)


def _describe(record: Record) -> Iterator[tuple[str, str, tuple[str, Any, str] | None]]:
    """(kind, text, (requester, id, method) for pairing) for each thing in the record."""
    if record.kind == "message":
        items = record.message if isinstance(record.message, list) else [record.message]
        for item in items:
            yield _message(item, record.sender)
    elif record.kind == "unparsed":
        yield "unparsed", f"not JSON ({record.fields.get('parseError')})", None
    elif record.kind == "http":
        http = record.fields.get("http")
        yield "http", _http(http if isinstance(http, dict) else {}, record.stream), None
    elif record.kind == "end":
        yield "end", f"{record.stream or 'connection'} ended: {record.fields.get('reason')}", None
    elif record.kind == "start":
        yield "start", f"recording {record.fields.get('target')} ({record.fields.get('recorder')})", None


def _message(message: Any, sender: str) -> tuple[str, str, tuple[str, Any, str] | None]:
    if not isinstance(message, dict):
        return "unparsed", f"not a JSON-RPC message: {_short(message)}", None
    method = message.get("method")
    given = message.get("params")
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    if isinstance(method, str):
        detail = _params(method, params)
        if "id" in message:
            return "request", f"#{message['id']} {method}{detail}", (sender, message["id"], method)
        return "notification", f"{method}{detail}", None
    request_id = message.get("id")
    pair = (_OTHER.get(sender, sender), request_id, "")
    error = message.get("error")
    if isinstance(error, dict):
        return "error", f"#{request_id} error {error.get('code')} {_short(error.get('message'), 80)}", pair
    result = message.get("result")
    flag = " isError" if isinstance(result, dict) and result.get("isError") is True else ""
    return "result", f"#{request_id} result{flag}", pair


def _params(method: str, params: dict[str, Any]) -> str:
    """What a request or notification is about, in a few words."""
    named = {
        "tools/call": "name",
        "prompts/get": "name",
        "resources/read": "uri",
        "resources/subscribe": "uri",
    }
    field = named.get(method, "protocolVersion" if method == "initialize" else None)
    if field is not None:
        value = params.get(field)
        return f" {value}" if isinstance(value, str) else ""
    if method == "notifications/progress":
        total = f"/{params['total']}" if "total" in params else ""
        return f" {params.get('progress')}{total}"
    if method.startswith("notifications/job/"):
        percentage = (
            f" {params['percentage']:g}%" if isinstance(params.get("percentage"), int | float) else ""
        )
        return f" {params.get('jobId')}{percentage}"
    return ""


def _http(http: dict[str, Any], stream: str | None) -> str:
    if "status" in http:
        body = f" {_short(http['body'], 60)}" if http.get("body") else ""
        return f"{stream}: HTTP {http['status']}{body}"
    headers = http.get("headers")
    resume = ""
    if isinstance(headers, dict) and "last-event-id" in headers:
        resume = f" Last-Event-ID {headers['last-event-id']}"
    return f"{stream}: {http.get('method')} {http.get('path')}{resume}"


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode(errors="replace")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key(request_id: Any) -> Any:
    return (
        request_id
        if isinstance(request_id, str | int) and not isinstance(request_id, bool)
        else repr(request_id)
    )


def _seconds(time: str | None) -> float:
    if time is None:
        return 0.0
    try:
        return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def format_step(step: Step) -> str:
    """A plain line of the timeline (the command colours it where the terminal can)."""
    latency = f"  ({step.latency_ms:.2f} ms)" if step.latency_ms is not None else ""
    arrow = _ARROW.get(step.sender, step.sender)
    return f"{step.seconds * 1000:>12.3f} ms  {step.conversation[:18]:<18}  {arrow:<15}  {step.text}{latency}"


# -- Mermaid ------------------------------------------------------------------------------------

MERMAID_LIMIT: Final = 200


def conversations(all_steps: Iterable[Step]) -> list[str]:
    """The conversations of a log, in the order they first appear."""
    seen: dict[str, None] = {}
    for step in all_steps:
        if step.conversation and step.kind not in ("unreadable", "start"):
            seen.setdefault(step.conversation, None)
    return list(seen)


def mermaid(all_steps: Iterable[Step], conversation: str, limit: int = MERMAID_LIMIT) -> str:
    """A `sequenceDiagram` of one conversation's messages (at most `limit`, then a note)."""
    lines = ["sequenceDiagram", "    participant C as Client", "    participant S as Server"]
    shown = left_out = 0
    for step in all_steps:
        if step.conversation != conversation or step.kind in ("start", "unreadable"):
            continue
        if shown >= limit:
            left_out += 1
            continue
        shown += 1
        lines.append("    " + _mermaid_step(step))
    if left_out:
        lines.append(f"    Note over C,S: {left_out} more messages not drawn (--limit)")
    return "\n".join(lines) + "\n"


def _mermaid_step(step: Step) -> str:
    source, target = ("C", "S") if step.sender == "client" else ("S", "C")
    text = _mermaid_text(step.text)
    if step.latency_ms is not None:
        text += f" ({step.latency_ms:.1f} ms)"
    if step.kind == "request":
        return f"{source}->>{target}: {text}"
    if step.kind == "result":
        return f"{source}-->>{target}: {text}"
    if step.kind == "error":
        return f"{source}--x{target}: {text}"
    if step.kind == "notification":
        return f"{source}-){target}: {text}"
    if step.kind == "unparsed":
        return f"{source}-x{target}: {text}"
    return f"Note over C,S: {text}"


def _mermaid_text(text: str) -> str:
    """Mermaid reads `;` as the end of a statement (and `#…;` as an entity): keep it out of labels."""
    return text.replace(";", ",").replace("\n", " ")
