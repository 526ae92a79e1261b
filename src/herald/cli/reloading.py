"""The app `herald run --http --reload` serves: made anew in each process the reloader starts.

uvicorn's reloader starts a fresh process on every change and imports an app factory by
name there; this is that factory. It reads which server to load from the environment
`herald.cli.serving` set before handing over.
"""

from __future__ import annotations

import os

from herald.cli.checks import USAGE_ERROR, UserError
from herald.cli.loading import load_server, server_file
from herald.cli.serving import RELOAD_PATH, RELOAD_STORE, RELOAD_TARGET, allowed_hosts
from herald.launch import http_app
from herald.transports.http import HttpConfig, McpApp

__all__ = ["app"]


def app() -> McpApp:
    """The ASGI app of the server file `herald run` was given.

    A mistake in the file as just saved is said in a line or two, as at start, and this
    process ends; the reloader starts another at the next change.
    """
    try:
        server = load_server(server_file(os.environ[RELOAD_TARGET]))
    except UserError as problem:
        problem.show()
        raise SystemExit(USAGE_ERROR) from None
    config = HttpConfig(path=os.environ.get(RELOAD_PATH, "/mcp"), allowed_hosts=allowed_hosts())
    return http_app(server, store=os.environ.get(RELOAD_STORE), config=config)
