"""Clients for herald servers, over stdio or Streamable HTTP, in either protocol era.

`connect_stdio` and `connect_http` open a connection as an async context manager; the
client they yield sends requests, collects notifications, and follows jobs with
`job_events`, which delivers each event exactly once and in order, and reconnects on its
own when the connection or the server goes away.
"""

from herald.client.base import Client, ConnectionLost, JobTrackingError, ServerError
from herald.client.http import HttpClient, SessionLost, connect_http
from herald.client.stdio import StdioClient, WireEvent, connect_stdio
from herald.client.tracking import JobEventTracker, RejectedEvent
from herald.jobs.events import JobEvent

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
