"""The messages many tests open with, written once."""

from __future__ import annotations

from typing import Any

#: What an HTTP client sends with every POST.
POST_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def initialize(version: str = "2025-11-25", *, request_id: int = 1, **capabilities: Any) -> dict[str, Any]:
    """An `initialize` request of a client named "t" declaring `capabilities`."""
    params = {
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


INITIALIZE = initialize()
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
