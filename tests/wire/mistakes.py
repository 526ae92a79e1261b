"""An MCP server and client that each make one classic mistake, chosen by a flag.

    python tests/wire/mistakes.py [--mistake NAME] [--http --port P]

The server is written by hand on raw JSON-RPC (stdio lines, or Streamable HTTP with JSON
and SSE answers), so it can break any rule; `drive()` is the client, which does the
same for the client's mistakes. Both follow one script: initialize, initialized,
tools/list, a call with progress, a business failure, a call again, a job with its
events, a resource read, a method the server does not have, a ping, and for some
mistakes one step more. Without a mistake the conversation is clean: `herald lint`
finds nothing in it. `EXPECTED` says which rule each mistake must trip, and nothing else.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]

#: mistake -> the one rule it breaks
SERVER_MISTAKES = {
    "result-and-error": "jsonrpc/result-and-error",
    "missing-id": "jsonrpc/response-without-id",
    "unknown-id": "jsonrpc/unknown-id",
    "business-error": "tools/business-error-as-protocol-error",
    "unstable-shape": "mcp/unstable-result-shape",
    "notification-answer": "mcp/notification-as-answer",
    "server-chatter": "lifecycle/before-initialized",
    "progress-backwards": "progress/backwards",
    "progress-after-response": "progress/after-response",
    "job-missing-fields": "jobs/missing-field",
    "job-after-completed": "jobs/after-terminal",
    "error-code": "jsonrpc/error-code",
    "is-error-without-content": "tools/is-error-without-content",
    "bad-structured-content": "tools/structured-content-schema",
    "list-changed-undeclared": "capabilities/list-changed-undeclared",
}
CLIENT_MISTAKES = {
    "reused-id": "jsonrpc/id-reused",
    "request-without-id": "jsonrpc/request-without-id",
    "tool-args": "mcp/wrong-param-names",
    "resource-id": "mcp/wrong-param-names",
    "client-chatter": "lifecycle/before-initialized",
    "undeclared-capability": "capabilities/undeclared",
    "batch": "jsonrpc/batch",
    "bad-arguments": "tools/arguments-schema",
}
EXPECTED = SERVER_MISTAKES | CLIENT_MISTAKES

TOOLS = [
    {
        "name": "suggest",
        "description": "Gift ideas within a budget.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "occasion": {"type": "string"},
                "budget": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["occasion", "budget"],
        },
    },
    {
        "name": "start_job",
        "description": "Starts a job; its events follow.",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {
            "type": "object",
            "properties": {"jobId": {"type": "string"}, "status": {"type": "string"}},
            "required": ["jobId", "status"],
        },
    },
]


class Server:
    """What the server answers to each message: the messages to send, in order."""

    def __init__(self, mistake: str | None) -> None:
        self.mistake = mistake
        self.calls = itertools.count(1)
        self.late: list[Message] = []  # sent before the next answer (progress after its response)

    def handle(self, message: Message) -> list[Message]:
        out, self.late = self.late, []
        method, request_id = message.get("method"), message.get("id")
        if method is None or "id" not in message:
            return out  # a notification, or an answer: nothing to say
        params = message.get("params") or {}
        if method == "initialize":
            out += self._initialize(request_id)
        elif method == "tools/list":
            out += self._tools_list(request_id)
        elif method == "tools/call":
            out += self._call(request_id, params)
        elif method == "resources/read":
            if "uri" not in params:
                out.append(_error(request_id, -32602, "Invalid params: resources/read needs uri"))
            else:
                text = json.dumps({"gifts": ["board game", "tea"]})
                content = {"uri": params["uri"], "mimeType": "application/json", "text": text}
                out.append(_result(request_id, {"contents": [content]}))
        elif method == "ping":
            out.append(_result(request_id, {}))
        else:
            code = -32500 if self.mistake == "error-code" else -32601
            out.append(_error(request_id, code, f"Method not found: {method}"))
        return out

    def _initialize(self, request_id: Any) -> list[Message]:
        capabilities: Message = {"tools": {}, "resources": {"listChanged": True}}
        answer = _result(
            request_id,
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "serverInfo": {"name": "mistakes", "version": "1"},
            },
        )
        if self.mistake == "server-chatter":  # before the client's notifications/initialized
            return [answer, _notification("notifications/resources/list_changed")]
        return [answer]

    def _tools_list(self, request_id: Any) -> list[Message]:
        answer = _result(request_id, {"tools": TOOLS})
        if self.mistake == "result-and-error":
            answer["error"] = {"code": -32603, "message": "and also an error"}
        elif self.mistake == "missing-id":
            del answer["id"]
        out = [answer]
        if self.mistake == "unknown-id":
            out.append(_result(999, {"tools": TOOLS}))
        if self.mistake == "list-changed-undeclared":
            out.append(_notification("notifications/tools/list_changed"))
        return out

    def _call(self, request_id: Any, params: Message) -> list[Message]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "start_job":
            return self._job(request_id)
        if name != "suggest":
            return [_error(request_id, -32602, f"Invalid params: unknown tool {name!r}")]
        call = next(self.calls)
        token = (params.get("_meta") or {}).get("progressToken")
        out: list[Message] = []
        if token is not None:
            steps = [1, 3, 2] if self.mistake == "progress-backwards" else [1, 2, 3]
            out += [
                _notification(
                    "notifications/progress", {"progressToken": token, "progress": step, "total": 3}
                )
                for step in steps
            ]
        budget = arguments.get("budget", 0)
        if isinstance(budget, int | float) and budget < 1:
            if self.mistake == "business-error":
                return [*out, _error(request_id, -32000, "no gift costs less than $1")]
            failure: Message = {"isError": True}
            if self.mistake != "is-error-without-content":
                failure["content"] = [
                    {"type": "text", "text": "No gift costs less than $1: raise the budget."}
                ]
            return [*out, _result(request_id, failure)]
        gifts = [{"name": "Board game", "price": 35}]
        key = "items" if self.mistake == "unstable-shape" and call > 1 else "gifts"
        answer = _result(
            request_id,
            {"content": [{"type": "text", "text": "Board game ($35)"}], "structuredContent": {key: gifts}},
        )
        out.append(answer)
        if self.mistake == "notification-answer":
            out.append(_notification("notifications/suggest/done", {"requestId": request_id, "gifts": gifts}))
        if self.mistake == "progress-after-response" and token is not None:
            self.late.append(
                _notification("notifications/progress", {"progressToken": token, "progress": 4, "total": 3})
            )
        return out

    def _job(self, request_id: Any) -> list[Message]:
        job = "job-1"
        stamps = (f"2026-12-02T00:00:0{second}Z" for second in range(10))
        events: list[tuple[str, Message]] = [
            ("created", {"tool": "start_job", "status": "pending"}),
            ("started", {"status": "running"}),
            ("progress", {"percentage": 50.0, "stage": "half"}),
            ("completed", {"status": "completed", "resultResourceId": "fixture://jobs/job-1/result.json"}),
        ]
        if self.mistake == "job-after-completed":
            events.append(("progress", {"percentage": 100.0, "stage": "late"}))
        out = []
        for sequence, (kind, payload) in enumerate(events, 1):
            params: Message = {
                "eventId": f"{job}:{sequence}",
                "type": f"job.{kind}",
                "jobId": job,
                "timestamp": next(stamps),
                **payload,
            }
            if self.mistake == "job-missing-fields" and kind == "progress":
                del params["eventId"]
            out.append(_notification(f"notifications/job/{kind}", params))
        structured: Message = (
            {"job": 1} if self.mistake == "bad-structured-content" else {"jobId": job, "status": "pending"}
        )
        out.append(
            _result(
                request_id,
                {"content": [{"type": "text", "text": f"Started {job}"}], "structuredContent": structured},
            )
        )
        return out


def _result(request_id: Any, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _notification(method: str, params: Message | None = None) -> Message:
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}


# -- the client --------------------------------------------------------------------------------

Send = Callable[[Any], list[Message]]


def drive(send: Send, mistake: str | None) -> None:
    """The client's script; `send(message)` returns what came back for it (nothing for a notification)."""
    ids = itertools.count(1)

    def request(method: str, params: Message | None = None) -> list[Message]:
        request_id = 1 if mistake == "reused-id" and method == "tools/call" else next(ids)
        return send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )

    info = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "mistakes", "version": "1"},
    }
    request("initialize", info)
    if mistake == "client-chatter":
        request("tools/list")
    send(_notification("notifications/initialized"))
    if mistake == "request-without-id":
        send(_notification("tools/list"))  # a request with no id: nobody answers it
    request("tools/list")
    if mistake == "tool-args":
        request("tools/call", {"tool": "suggest", "args": {"occasion": "birthday", "budget": 40}})
    elif mistake == "bad-arguments":
        request("tools/call", {"name": "suggest", "arguments": {"occasion": "birthday", "budget": "forty"}})
    request(
        "tools/call",
        {
            "name": "suggest",
            "arguments": {"occasion": "birthday", "budget": 40},
            "_meta": {"progressToken": "p1"},
        },
    )
    request("tools/call", {"name": "suggest", "arguments": {"occasion": "birthday", "budget": 0.5}})
    request("tools/call", {"name": "suggest", "arguments": {"occasion": "wedding", "budget": 80}})
    request("tools/call", {"name": "start_job", "arguments": {}})
    read = {"resourceId": "fixture://catalog"} if mistake == "resource-id" else {"uri": "fixture://catalog"}
    request("resources/read", read)
    if mistake == "undeclared-capability":
        request("prompts/list")
    if mistake == "batch":
        send(
            [
                {"jsonrpc": "2.0", "id": next(ids), "method": "ping"},
                {"jsonrpc": "2.0", "id": next(ids), "method": "ping"},
            ]
        )
    request("gifts/wishlist")  # no such method: answered with -32601
    request("ping")


# -- the transports ----------------------------------------------------------------------------


def serve_stdio(server: Server) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        replies = (
            [reply for item in message for reply in server.handle(item)]
            if isinstance(message, list)
            else server.handle(message)
        )
        # One write for all the replies, even unbuffered (PYTHONUNBUFFERED): a notification sent
        # with an answer reaches the recorder before the client can read the answer and go on.
        sys.stdout.write("".join(json.dumps(reply) + "\n" for reply in replies))
        sys.stdout.flush()


def serve_http(server: Server, port: int) -> None:
    import uvicorn

    async def app(scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            part = await receive()
            body += part.get("body", b"")
            if not part.get("more_body"):
                break
        if scope["method"] != "POST":
            await _respond(send, 405, b"", "text/plain")
            return
        message = json.loads(body)
        items = message if isinstance(message, list) else [message]
        replies = [reply for item in items for reply in server.handle(item)]
        headers = (
            [(b"mcp-session-id", b"session-1")]
            if any(item.get("method") == "initialize" for item in items)
            else []
        )
        if not any("id" in item and "method" in item for item in items):
            await _respond(send, 202, b"", "text/plain", headers)
        elif len(replies) == 1 and not isinstance(message, list):
            await _respond(send, 200, json.dumps(replies[0]).encode(), "application/json", headers)
        else:
            events = b"".join(
                b"id: e%d\ndata: %s\n\n" % (next(EVENT_IDS), json.dumps(reply).encode()) for reply in replies
            )
            await _respond(send, 200, events, "text/event-stream", headers)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")


EVENT_IDS = itertools.count(1)


async def _respond(
    send: Any, status: int, body: bytes, content_type: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mistake", choices=sorted(SERVER_MISTAKES))
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    server = Server(options.mistake)
    if options.http:
        serve_http(server, options.port)
    else:
        serve_stdio(server)


if __name__ == "__main__":
    main()
