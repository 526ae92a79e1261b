"""Work on a worker thread reports through the loop, in order, and stops when its task is cancelled."""

from __future__ import annotations

import asyncio
import threading

import pytest

from herald.runtime.threads import LoopCall, Stopped, in_thread


async def test_the_work_runs_off_the_loop_and_its_calls_run_on_it_in_order() -> None:
    loop_thread = threading.get_ident()
    heard: list[tuple[int, int]] = []

    async def report(number: int) -> int:
        heard.append((number, threading.get_ident()))
        return number * 2

    def work(call: LoopCall) -> tuple[int, list[int]]:
        return threading.get_ident(), [call.run(report, number) for number in range(5)]

    worker_thread, answers = await in_thread(work)
    assert worker_thread != loop_thread
    assert answers == [0, 2, 4, 6, 8], "each call returns what the coroutine returned"
    assert heard == [(number, loop_thread) for number in range(5)], "run on the loop, in order"


async def test_an_error_on_the_loop_is_raised_in_the_work_and_out_of_it() -> None:
    async def refuse() -> None:
        raise OSError("disk full")

    def work(call: LoopCall) -> None:
        call.run(refuse)

    with pytest.raises(OSError, match="disk full"):
        await in_thread(work)


async def test_cancelling_stops_the_work_at_its_next_call_and_waits_for_the_thread() -> None:
    started, release = threading.Event(), threading.Event()
    ended: list[str] = []

    def work(call: LoopCall) -> None:
        started.set()
        release.wait(10)
        try:
            call.check()
        except Stopped:
            ended.append("stopped")
            raise
        ended.append("went on")

    task = asyncio.ensure_future(in_thread(work))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done(), "the cancellation waits for the thread"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == ["stopped"]
