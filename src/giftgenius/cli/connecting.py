"""One way for every command to reach a server: the one at `--url`, or a private one it starts.

Failures to connect are turned into what a person can act on here, once, so that no
command ends in `ConnectError` or a `KeyError` on a reply that was never MCP.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from giftgenius.cli.options import checked_url
from giftgenius.cli.problems import UserError, not_mcp, unreachable

if TYPE_CHECKING:
    from herald.client import Client, WireEvent

#: The private server `call` and `bulk` start when no URL is given. It keeps its jobs in
#: memory: it lives only as long as the command, and opening the shared store would make it
#: fail, at start-up, the jobs a long-running server on the same file is still running.
SPAWNED_SERVER = [sys.executable, "-m", "giftgenius", "serve", "--stdio", "--quiet", "--store", "memory"]
#: How the private server is named in messages.
SPAWNED = "the GiftGenius server this command started"


@contextlib.asynccontextmanager
async def connected(
    url: str | None,
    *,
    modern: bool,
    spawn: list[str] = SPAWNED_SERVER,
    on_wire: Callable[[WireEvent], None] | None = None,
    retry_for: float = 30.0,
) -> AsyncIterator[Client]:
    """A client of the server at `url`, or of a private one started with `spawn`.

    Not reaching it, or reaching something that does not speak MCP, is a `UserError`
    naming the URL; so is a connection lost later, or an error answer no command
    expected. Commands catch what they can say better (which job, how to go on) first.
    """
    from herald.client import ConnectionLost, JobTrackingError, ServerError, connect_http, connect_stdio

    where = SPAWNED if url is None else checked_url(url)
    opening = (
        connect_stdio(spawn, modern, on_wire=on_wire, reconnect_timeout=retry_for)
        if url is None
        else connect_http(url, modern, on_wire=on_wire, reconnect_timeout=retry_for)
    )
    entered = False
    try:
        async with opening as client:
            entered = True
            yield client
    except ConnectionLost as lost:
        if entered:
            raise UserError(f"lost the connection to {where} ({lost})") from None
        if url is None:
            raise UserError(
                f"{SPAWNED} did not start ({lost})", "Run `giftgenius serve --stdio` to see why."
            ) from None
        raise unreachable(where, str(lost)) from None
    except ServerError as error:
        if entered:
            raise UserError(f"{where} answered with an error: {error.message}") from None
        raise not_mcp(where, error) from None
    except JobTrackingError as error:
        raise UserError(f"{where} reported a job that does not add up: {error}") from None
