"""`herald record`: transparent proxies that write a message log of any MCP server's traffic.

`record_stdio` sits in the pipes of a stdio server; `RecordingProxy` is an ASGI app that
forwards Streamable HTTP to an upstream URL. Both write the format of `herald.wire`.
"""

from __future__ import annotations

from herald.record.http import RecordingProxy, Upstream, origin_of
from herald.record.stdio import ServerDidNotStart, record_stdio

__all__ = ["RecordingProxy", "ServerDidNotStart", "Upstream", "origin_of", "record_stdio"]
