"""Task groups: one whose block raises its own exceptions as they are, and a guard for tasks.

`asyncio.TaskGroup` wraps an exception raised in its block into an `ExceptionGroup`
(Python 3.11), so code that owns tasks around a caller's block would change what the
caller's `except ValueError:` catches. `task_group()` keeps the guarantee that matters,
every task started in the block is cancelled or finished and awaited when it ends, and
re-raises the block's own exception unwrapped when no task failed besides. `logged()`
wraps a task whose failure must end only itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["logged", "task_group"]

logger = logging.getLogger("herald")


@asynccontextmanager
async def task_group() -> AsyncIterator[asyncio.TaskGroup]:
    group = asyncio.TaskGroup()
    await group.__aenter__()
    try:
        yield group
    except BaseException as exc:
        try:
            await group.__aexit__(type(exc), exc, exc.__traceback__)
        except BaseExceptionGroup as wrapped:
            if wrapped.exceptions == (exc,):
                raise exc from exc.__cause__
            raise
        raise
    await group.__aexit__(None, None, None)


async def logged(coroutine: Coroutine[Any, Any, T], owner: str) -> T | None:
    """Run `coroutine`; if it fails, log why and return None instead of raising.

    For tasks whose failure must end only themselves: in a task group, a task that raises
    cancels every other task of the group, which for a server's shared group is every
    session.
    """
    try:
        return await coroutine
    except Exception:
        logger.exception("a task of %s failed", owner)
        return None
