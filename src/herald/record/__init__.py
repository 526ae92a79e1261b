"""`herald record`: transparent proxies that write a message log of any MCP server's traffic.

`record_stdio` sits in the pipes of a stdio server; `RecordingProxy` is an ASGI app that
forwards Streamable HTTP to an upstream URL. Both write the format of `herald.wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from herald.record.stdio import ServerDidNotStart, record_stdio

if TYPE_CHECKING:
    from herald.record.http import RecordingProxy, Upstream, origin_of

__all__ = ["RecordingProxy", "ServerDidNotStart", "Upstream", "origin_of", "record_stdio"]


#: What comes from `herald.record.http`, which needs aiohttp (`herald[record]`): imported on first use.
_OVER_HTTP = frozenset({"RecordingProxy", "Upstream", "origin_of"})


def __getattr__(name: str) -> Any:
    if name in _OVER_HTTP:
        from herald.extras import needs

        with needs("record", "recording an HTTP server"):
            from herald.record import http
        return getattr(http, name)
    raise AttributeError(f"module 'herald.record' has no attribute {name!r}")
