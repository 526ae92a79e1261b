"""Benchmark fixture: herald serving `echo(text)` and `progress(steps)`.

Same tools and flags as the fixtures in the shared bench folder, so mcpload.py can
measure herald side by side with them:
  python bench/echo_server.py [--transport stdio|http] [--port N] [--store URL] [--message-log FILE]

`--store` (HTTP) shares sessions and event streams through a store, as replicas do
(`bench/replicas.py` runs several behind a balancer). `--message-log` records every
message as `giftgenius serve --message-log` does (`bench/record_overhead.py`).
"""

from __future__ import annotations

import argparse

from herald import Context, Server


def build() -> Server:
    server = Server("bench-herald", version="0")

    @server.tool
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool
    async def progress(steps: int, ctx: Context) -> str:
        """Send `steps` progress notifications, then return."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"done {steps}"

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--store", help="share sessions through this store (sqlite:///PATH, redis://…)")
    parser.add_argument("--message-log", help="record every message to this file")
    args = parser.parse_args(argv)
    server = build()
    from herald.wire.writer import MessageLog

    message_log = MessageLog.open(args.message_log) if args.message_log else None
    if args.transport == "stdio":
        from herald.transports.stdio import run_stdio

        run_stdio(server, message_log=message_log)
    else:
        from herald.transports.http import run_http

        if args.store is None:
            run_http(server, port=args.port, message_log=message_log)
            return
        from herald.stores.location import open_stores

        stores = open_stores(args.store, app_name="bench-herald")
        run_http(server, port=args.port, log=stores.log, sessions=stores.sessions, message_log=message_log)


if __name__ == "__main__":
    main()
