"""One way for every command to reach a server: at a URL, or a private one it starts over stdio.

Failures to connect are turned into what a person can act on here, once, so that no
command ends in `ConnectError` or a `KeyError` on a reply that was never MCP. A `Target`
says where the server is and how messages name it, so the `herald` and `giftgenius`
commands share this and differ only in their words.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from herald.cli.arguments import checked_url
from herald.cli.problems import UserError, not_mcp, unreachable

if TYPE_CHECKING:
    from herald.client import Client, WireEvent


@dataclass(frozen=True)
class Target:
    """The server a command talks to: at `url`, or started with `spawn` for the one command.

    `name` is how messages call a started server, `start_hint` what to run to see why it
    would not start, and `again` writes the command that does something later to the same
    server (`again("result", job_id)`), for the hints a lost connection ends with.
    """

    url: str | None
    spawn: list[str]
    name: str
    start_hint: str
    again: Callable[[str, str], str]

    @property
    def where(self) -> str:
        """The server as messages name it: its URL, or the private server's name."""
        return self.name if self.url is None else self.url


@contextlib.asynccontextmanager
async def connected(
    target: Target,
    *,
    modern: bool,
    on_wire: Callable[[WireEvent], None] | None = None,
    retry_for: float = 30.0,
) -> AsyncIterator[Client]:
    """A client of `target`'s server, spoken to in the era `modern` picks.

    Not reaching it, or reaching something that does not speak MCP, is a `UserError`
    naming it; so is a connection lost later, or an error answer no command expected.
    Commands catch what they can say better (which job, how to go on) first.
    """
    from herald.client import ConnectionLost, JobTrackingError, ServerError, connect_http, connect_stdio

    url = target.url
    where = target.name if url is None else checked_url(url)
    opening = (
        connect_stdio(target.spawn, modern, on_wire=on_wire, reconnect_timeout=retry_for)
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
            raise UserError(f"{target.name} did not start ({lost})", target.start_hint) from None
        raise unreachable(where, str(lost)) from None
    except ServerError as error:
        if entered:
            raise UserError(f"{where} answered with an error: {error.message}") from None
        raise not_mcp(where, error) from None
    except JobTrackingError as error:
        raise UserError(f"{where} reported a job that does not add up: {error}") from None
