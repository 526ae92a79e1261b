"""A server for the stdio transport tests, run as a real process."""

from __future__ import annotations

import asyncio
import sys

from herald import Context, Server
from herald.transports.stdio import run_stdio

server = Server("stdio-test")


@server.tool
async def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool
async def pause(seconds: float) -> str:
    """Take a while before answering."""
    await asyncio.sleep(seconds)
    return f"paused {seconds}"


@server.tool
def noisy() -> str:
    """Prints to stdout, which must not reach the protocol stream."""
    print("this line belongs on stderr")
    return "quiet"


@server.tool
async def steps(count: int, ctx: Context) -> str:
    """Report progress `count` times."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count)
    return "done"


if __name__ == "__main__":
    run_stdio(server, max_message_bytes=int(sys.argv[1]) if len(sys.argv) > 1 else 4 * 1024 * 1024)
