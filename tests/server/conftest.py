"""A small server exercising every registration kind, built fresh for each test."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest
from pydantic import Field
from typing_extensions import TypedDict

from herald import Context, Server, ToolError


class Sum(TypedDict):
    total: int


def build_demo_server() -> Server:
    server = Server("demo", version="1.2.3", instructions="A server for tests.", page_size=2)

    @server.tool(annotations={"readOnlyHint": True}, title="Echo", meta={"demo/kind": "echo"})
    async def echo(text: Annotated[str, Field(description="What to say back")]) -> str:
        """Return the text unchanged."""
        return text

    @server.tool
    def add(a: int, b: int = 0) -> Sum:
        """Add two integers."""
        return {"total": a + b}

    @server.tool(
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    def broken_output() -> dict[str, str]:
        """Returns data that breaks its own schema."""
        return {"n": "not a number"}

    @server.tool
    async def fail(reason: str) -> str:
        """Fails as a business error."""
        raise ToolError(f"cannot do that: {reason}")

    @server.tool
    async def crash() -> str:
        """Fails with a bug."""
        raise RuntimeError("secret internal detail")

    @server.tool
    async def wait(gate: str, ctx: Context) -> str:
        """Waits until the test opens the named gate."""
        await GATES.setdefault(gate, asyncio.Event()).wait()
        return f"opened {gate}"

    @server.tool
    async def steps(count: int, ctx: Context) -> str:
        """Reports progress `count` times."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
        return "done"

    @server.tool
    async def backwards(ctx: Context) -> str:
        """Reports progress that goes backwards: a bug in the tool."""
        await ctx.report_progress(5)
        await ctx.report_progress(3)
        return "unreachable"

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Logs at several levels."""
        await ctx.debug("debug line")
        await ctx.info("info line")
        await ctx.error("error line")
        return "logged"

    @server.resource("demo://readme", mime_type="text/plain", description="Read me")
    def readme() -> str:
        return "hello"

    @server.resource("demo://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG"

    @server.resource_template(
        "demo://items/{item_id}",
        mime_type="application/json",
        complete={
            "item_id": lambda prefix: [i for i in ("apple", "apricot", "banana") if i.startswith(prefix)]
        },
    )
    def item(item_id: str) -> dict[str, str]:
        if item_id == "missing":
            raise KeyError(item_id)
        return {"id": item_id}

    @server.prompt(complete={"tone": lambda prefix: [t for t in ("warm", "formal") if t.startswith(prefix)]})
    def greeting(name: str, tone: str = "warm") -> str:
        """Greets someone."""
        return f"Write a {tone} greeting for {name}."

    return server


GATES: dict[str, asyncio.Event] = {}


@pytest.fixture
def server() -> Server:
    GATES.clear()
    return build_demo_server()
