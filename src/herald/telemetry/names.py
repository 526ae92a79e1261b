"""The names herald reports under: the MCP conventions' where they define one, herald's own beyond.

Kept apart from the instruments so that the documentation and the tests name the same
strings the code does, and a rename is one change.
"""

from __future__ import annotations

from typing import Any, Final

# -- attributes (the conventions') -----------------------------------------------------------
METHOD: Final = "mcp.method.name"
PROTOCOL_VERSION: Final = "mcp.protocol.version"
SESSION_ID: Final = "mcp.session.id"
RESOURCE_URI: Final = "mcp.resource.uri"
REQUEST_ID: Final = "jsonrpc.request.id"
TOOL_NAME: Final = "gen_ai.tool.name"
PROMPT_NAME: Final = "gen_ai.prompt.name"
OPERATION_NAME: Final = "gen_ai.operation.name"
ERROR_TYPE: Final = "error.type"
STATUS_CODE: Final = "rpc.response.status_code"
TRANSPORT: Final = "network.transport"
NETWORK_PROTOCOL: Final = "network.protocol.name"
CLIENT_ADDRESS: Final = "client.address"

#: The conventions' fallback for a value that would grow a metric without bound (a method,
#: tool or error code a peer made up).
OTHER: Final = "_OTHER"
#: `error.type` of a tool call answered with `isError: true`.
TOOL_ERROR: Final = "tool_error"
#: `error.type` of a request the client cancelled (or the server stopped serving).
CANCELLED: Final = "cancelled"

# -- attributes (herald's) -------------------------------------------------------------------
JOB_ID: Final = "herald.job.id"
JOB_OUTCOME: Final = "herald.job.outcome"
JOB_RESUMED: Final = "herald.job.resumed"
EVENT_KIND: Final = "herald.job.event"
BACKPRESSURE_ACTION: Final = "herald.backpressure.action"

# -- metrics (the conventions') --------------------------------------------------------------
SERVER_OPERATION_DURATION: Final = "mcp.server.operation.duration"
SERVER_SESSION_DURATION: Final = "mcp.server.session.duration"
CLIENT_OPERATION_DURATION: Final = "mcp.client.operation.duration"
#: The bucket boundaries the conventions give for all four MCP histograms, in seconds.
DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

# -- metrics (herald's) ----------------------------------------------------------------------
JOBS_STARTED: Final = "herald.jobs.started"
JOBS_ENDED: Final = "herald.jobs.ended"
JOBS_RUNNING: Final = "herald.jobs.running"
JOBS_QUEUED: Final = "herald.jobs.queued"
JOB_QUEUE_DURATION: Final = "herald.job.queue.duration"
JOB_EVENTS: Final = "herald.job.events"
STORE_WRITE_DURATION: Final = "herald.store.write.duration"
#: A store write is milliseconds, not the seconds of an MCP operation.
STORE_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
HTTP_SESSIONS_OPEN: Final = "herald.http.sessions.open"
HTTP_STREAMS_OPEN: Final = "herald.http.streams.open"
HTTP_BACKPRESSURE: Final = "herald.http.backpressure"


def target_attributes(method: str, target: str | None) -> dict[str, str]:
    """The attributes naming what `method` is about: the tool of a call, the prompt of a get."""
    if target is None:
        return {}
    if method == "tools/call":
        return {TOOL_NAME: target, OPERATION_NAME: "execute_tool"}
    if method == "prompts/get":
        return {PROMPT_NAME: target}
    return {}


def span_name(method: str, attributes: dict[str, Any]) -> str:
    """`{method} {target}` where the attributes name a tool or prompt, else the method."""
    target = attributes.get(TOOL_NAME) or attributes.get(PROMPT_NAME)
    return f"{method} {target}" if target else method
