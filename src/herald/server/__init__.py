"""The transport-independent server: registry, dispatch, request context, connections."""

from herald.server.app import Server
from herald.server.connection import Connection
from herald.server.context import Context

__all__ = ["Connection", "Context", "Server"]
