"""Clients for herald servers: today a stdio client that spawns its server."""

from herald.client.stdio import StdioClient, WireEvent

__all__ = ["StdioClient", "WireEvent"]
