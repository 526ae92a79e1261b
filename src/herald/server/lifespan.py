"""A server's lifespan: what it opens once per process, and how functions reach it.

`Server(lifespan=fn)` takes a function of the server that returns an async context
manager (an `@asynccontextmanager`): it is entered before the server takes its first
request or job and left after the last job has stopped, on stdio, on HTTP (served or
mounted in another ASGI app) and in a worker that only runs jobs. What it yields (a
database pool, a client, a dict of them) is `ctx.lifespan` in every `Context` and
`JobContext`, and a tool, prompt or job can take a part of it as a parameter,
`pool: Annotated[Pool, FromLifespan("pool")]`, which never appears in its schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

__all__ = ["FromLifespan", "Lifespan", "LifespanNotRunning"]

#: What `Server(lifespan=...)` takes: a function of the server (typed loosely, as the server
#: module imports this one) returning an async context manager.
Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]


class LifespanNotRunning(RuntimeError):
    """A function asked for its lifespan's value, but the server's lifespan has not run.

    Inside another ASGI app that happens when the app's lifespan does not enter the mounted
    app's (see `Server.http_app`); a server run from a test needs `async with server.running()`.
    """


@dataclass(frozen=True, slots=True)
class FromLifespan:
    """Marks a parameter filled from what the lifespan yielded: all of it, or one `key` of it
    (an item of a mapping, else an attribute)."""

    key: str | None = None

    def resolve(self, state: Any, running: bool) -> Any:
        if not running:
            raise LifespanNotRunning(
                "the server's lifespan is not running, so there is nothing to fill this parameter with"
            )
        if self.key is None:
            return state
        if isinstance(state, Mapping):
            return state[self.key]
        return getattr(state, self.key)
