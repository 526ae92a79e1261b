"""Plain `def` tools, resources, prompts and completers run on worker threads, off the loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from herald import JobContext, Server
from herald.testing import connect, job_ended


def build(held: threading.Event, entered: threading.Event, *, max_threads: int = 4) -> Server:
    server = Server("sync", max_threads=max_threads)
    loop_thread = threading.get_ident()

    @server.tool
    def blocking(name: str) -> str:
        """Blocks its thread until the test lets it go, like a slow database call."""
        entered.set()
        if not held.wait(timeout=30):
            raise TimeoutError("never released")
        return f"released {name}"

    @server.tool
    def where() -> dict[str, bool]:
        """Says whether it ran on the event loop's thread."""
        return {"on_loop": threading.get_ident() == loop_thread}

    @server.resource("data://where")
    def where_resource() -> dict[str, bool]:
        return {"on_loop": threading.get_ident() == loop_thread}

    @server.prompt()
    def where_prompt() -> str:
        return f"on_loop={threading.get_ident() == loop_thread}"

    @server.resource_template("data://items/{item}", complete={"item": lambda prefix: [prefix + "-thread"]})
    def item(item: str) -> str:
        return item

    @server.job
    async def quick(ctx: JobContext) -> dict[str, Any]:
        await ctx.report_progress(50, "half")
        return {"done": True}

    return server


async def test_a_blocking_tool_holds_neither_other_calls_nor_jobs() -> None:
    held, entered = threading.Event(), threading.Event()
    async with connect(build(held, entered)) as client:
        slow = asyncio.ensure_future(client.call_tool("blocking", {"name": "a"}))
        assert await asyncio.to_thread(entered.wait, 10), "the call reached its thread"
        async with asyncio.timeout(10):
            assert (await client.call_tool("where"))["structuredContent"] == {"on_loop": False}
            job_id = (await client.call_tool("quick"))["structuredContent"]["jobId"]
            await job_ended(client.server, job_id)
        status = (await client.call_tool("get_job_status", {"jobId": job_id}))["structuredContent"]
        assert status["status"] == "completed", "a job ran to its end while the tool blocked"
        assert not slow.done(), "the blocking call was still waiting all along"
        held.set()
        async with asyncio.timeout(10):
            answer = await slow
        assert answer["content"][0]["text"] == "released a"


async def test_resources_prompts_and_completers_run_off_the_loop() -> None:
    async with connect(build(threading.Event(), threading.Event())) as client:
        read = await client.request("resources/read", {"uri": "data://where"})
        assert read["contents"][0]["text"] == '{"on_loop":false}'
        prompt = await client.request("prompts/get", {"name": "where_prompt"})
        assert prompt["messages"][0]["content"]["text"] == "on_loop=False"
        completed = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "data://items/{item}"},
                "argument": {"name": "item", "value": "x"},
            },
        )
        assert completed["completion"]["values"] == ["x-thread"]


async def test_calls_past_the_limit_wait_for_a_thread() -> None:
    held, entered = threading.Event(), threading.Event()
    async with connect(build(held, entered, max_threads=1)) as client:
        first = asyncio.ensure_future(client.call_tool("blocking", {"name": "first"}))
        assert await asyncio.to_thread(entered.wait, 10)
        second = asyncio.ensure_future(client.call_tool("where"))
        waiting = client.server.threads.executor._work_queue  # the calls no thread has taken yet
        async with asyncio.timeout(10):
            while waiting.qsize() != 1:  # noqa: ASYNC110 - a thread pool's queue has no event to await
                await asyncio.sleep(0.01)
        assert not second.done(), "the one thread is taken; the second call waits its turn"
        held.set()
        async with asyncio.timeout(10):
            assert (await first)["content"][0]["text"] == "released first"
            assert (await second)["structuredContent"] == {"on_loop": False}


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_threads must be at least 1"):
        Server("x", max_threads=0)
