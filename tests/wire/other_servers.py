"""The same small server written with the official Python SDK (`mcp`) and with FastMCP, for
recording servers that are not herald's.

    python tests/wire/other_servers.py sdk|fastmcp [--http --port P]

Each has a tool with text output (`echo`), one with structured output (`add`), one that
reports progress (`count`), a resource and a prompt.
"""

import argparse  # no `from __future__ import annotations`: both frameworks read the hints at run time
from typing import Any


def build_sdk() -> Any:
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("recorded-sdk", version="1", log_level="WARNING")

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool(structured_output=False)
    async def count(steps: int, ctx: Context) -> str:
        """Report progress `steps` times."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"counted to {steps}"

    @server.resource("recorded://greeting", mime_type="text/plain")
    def greeting() -> str:
        """A greeting."""
        return "hello"

    @server.prompt()
    def thank(name: str) -> str:
        """Write a thank-you note."""
        return f"Write a short thank-you note to {name}."

    return server


def build_fastmcp() -> Any:
    from fastmcp import Context, FastMCP

    server = FastMCP("recorded-fastmcp")

    @server.tool(output_schema=None)
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool(output_schema=None)
    async def count(steps: int, ctx: Context) -> str:
        """Report progress `steps` times."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"counted to {steps}"

    @server.resource("recorded://greeting", mime_type="text/plain")
    def greeting() -> str:
        """A greeting."""
        return "hello"

    @server.prompt()
    def thank(name: str) -> str:
        """Write a thank-you note."""
        return f"Write a short thank-you note to {name}."

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("framework", choices=["sdk", "fastmcp"])
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    server = build_sdk() if options.framework == "sdk" else build_fastmcp()
    if not options.http:
        server.run("stdio") if options.framework == "sdk" else server.run(show_banner=False)
        return
    import uvicorn

    if options.framework == "sdk":
        app = server.streamable_http_app(host="127.0.0.1")
    else:
        app = server.http_app(path="/mcp")
    uvicorn.run(
        app, host="127.0.0.1", port=options.port, log_level="warning", access_log=False, lifespan="on"
    )


if __name__ == "__main__":
    main()
