"""What the command line tells a person whose input, or whose server, is wrong.

A mistake of the person at the keyboard never ends in a traceback: it is said in a line
or two (what was wrong, then what to do) and the command exits with status 2, the
status of a usage error. Each message names the thing it is about (the file, the URL,
the job id), because it is read later, in a scrollback, without the command beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from herald.cli.checks import USAGE_ERROR, UserError

if TYPE_CHECKING:
    from herald.client import ServerError

__all__ = ["USAGE_ERROR", "UserError", "not_mcp", "refused", "unreachable"]


def unreachable(url: str, why: str) -> UserError:
    """The server at `url` did not answer: say where we tried, and what usually fixes it."""
    return UserError(
        f"cannot reach an MCP server at {url} ({why})",
        "Is the server running there? Check the host, the port and the path (herald serves /mcp).",
    )


def not_mcp(url: str, error: ServerError) -> UserError:
    """Something answered at `url`, but not as an MCP endpoint does."""
    status = f"HTTP {error.http_status}" if error.http_status else f"code {error.code}"
    first_line = (error.message.strip().splitlines() or [""])[0][:200]
    hint = "herald servers serve MCP at the path /mcp, e.g. http://127.0.0.1:8000/mcp"
    if error.http_status == 403:
        hint = (
            "The server refused this client's Host or Origin: start it with --allow-host and the "
            "name in this URL."
        )
    return UserError(f"{url} did not answer as an MCP endpoint ({status}: {first_line})", hint)


def refused(what: str, error: ServerError) -> UserError:
    """The server refused a request as invalid: its own words say what to change."""
    return UserError(f"the server refused {what}: {error.message}")
