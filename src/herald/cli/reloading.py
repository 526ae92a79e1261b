"""The app `herald run --http --reload` serves: made anew in each process the reloader starts.

uvicorn's reloader starts a fresh process on every change and imports an app factory by
name there; this is that factory. It reads which server to load from the environment
`herald.cli.serving` set before handing over.
"""

from __future__ import annotations

import os

from herald.cli.loading import load_server, server_file
from herald.cli.serving import RELOAD_PATH, RELOAD_STORE, RELOAD_TARGET
from herald.launch import http_app
from herald.transports.http import McpApp

__all__ = ["app"]


def app() -> McpApp:
    """The ASGI app of the server file `herald run` was given."""
    server = load_server(server_file(os.environ[RELOAD_TARGET]))
    return http_app(server, path=os.environ.get(RELOAD_PATH, "/mcp"), store=os.environ.get(RELOAD_STORE))
