"""Clients for herald servers, over stdio or Streamable HTTP, in either protocol era.

`connect_stdio` and `connect_http` open a connection as an async context manager; the
client they yield sends requests, collects notifications, and follows jobs with
`job_events`, which delivers each event exactly once and in order, and reconnects on its
own when the connection or the server goes away.
"""

from typing import TYPE_CHECKING, Any

from herald.client.base import Client, ConnectionLost, JobTrackingError, ServerError
from herald.client.stdio import StdioClient, WireEvent, connect_stdio
from herald.client.tracking import JobEventTracker, RejectedEvent
from herald.jobs.events import JobEvent

if TYPE_CHECKING:
    from herald.client.http import HttpClient, SessionLost, connect_http

__all__ = [
    "Client",
    "ConnectionLost",
    "HttpClient",
    "JobEvent",
    "JobEventTracker",
    "JobTrackingError",
    "RejectedEvent",
    "ServerError",
    "SessionLost",
    "StdioClient",
    "WireEvent",
    "connect_http",
    "connect_stdio",
]


#: What comes from `herald.client.http`, which needs httpx (`herald[client]`): imported on first use.
_OVER_HTTP = frozenset({"HttpClient", "SessionLost", "connect_http"})


def __getattr__(name: str) -> Any:
    if name in _OVER_HTTP:
        from herald.extras import needs

        with needs("client", "herald.client over HTTP"):
            from herald.client import http
        return getattr(http, name)
    raise AttributeError(f"module 'herald.client' has no attribute {name!r}")
