"""Middleware: code that runs around every request a server handles.

`server.add_middleware(fn)` takes `async def fn(call, call_next)`. `call` (a `Call`) says
what is asked (the method, the tool, prompt or resource it names, the params) and by whom
(the principal, the session, the network address); `await call_next(call)` runs the rest
of the chain and the handler and returns the result, which the middleware may read or
change. To refuse, it raises a `ProtocolError` (an error response) or, for `tools/call`,
returns `call.tool_error(text)` (a result the model reads). Middleware registered first
runs outermost: the order of registration is the order of the onion's layers.

It runs for every request the handlers answer, in both eras and on every transport
(`initialize`, which the protocol layer answers itself, is not one). With none
registered, nothing here runs: the dispatch calls the handler directly.

Three come with herald: `timing` (a log line per request), `RateLimit` (a token bucket
per caller) and `errors_as_tool_results` (no exception escapes as more than a line).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from herald.content import text
from herald.protocol.errors import InternalError, ProtocolError
from herald.protocol.messages import RequestId
from herald.protocol.versions import Era
from herald.server.principal import Principal

__all__ = [
    "Call",
    "CallNext",
    "Middleware",
    "RateLimit",
    "RateLimited",
    "chain",
    "errors_as_tool_results",
    "timing",
]

logger = logging.getLogger("herald.middleware")


@dataclass(slots=True)
class Call:
    """One request as middleware sees it."""

    method: str
    params: dict[str, Any]
    request_id: RequestId
    era: Era
    #: The authenticated caller, where the transport authenticates.
    principal: Principal | None
    #: Who the request belongs to without a principal: its handshake-era session (None for
    #: a 2026-07-28 request, which has none).
    owner: str | None
    #: The network address the request came from, where the transport knows it (HTTP).
    peer: str | None

    @property
    def name(self) -> str | None:
        """What the request names: the tool or prompt, or the resource's URI."""
        named = self.params.get("name", self.params.get("uri"))
        return named if isinstance(named, str) else None

    @property
    def caller(self) -> str:
        """Who is calling, as a key to count by: the token's subject, else the address, else
        the session, else "anonymous" (a 2026-07-28 request on stdio, whose process is its
        only caller)."""
        if self.principal is not None:
            return f"subject:{self.principal.issuer}:{self.principal.subject}"
        if self.peer is not None:
            return f"address:{self.peer}"
        if self.owner is not None:
            return f"session:{self.owner}"
        return "anonymous"

    def tool_error(self, message: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """A `tools/call` result that refuses with `message`, for the model to read and act on."""
        result: dict[str, Any] = {"content": [text(message)], "isError": True}
        if meta is not None:
            result["_meta"] = meta
        return result


CallNext = Callable[[Call], Awaitable[dict[str, Any]]]
Middleware = Callable[[Call, CallNext], Awaitable[dict[str, Any]]]


def chain(middleware: list[Middleware], handler: CallNext) -> CallNext:
    """`handler` wrapped in `middleware`, the first registered outermost."""
    wrapped = handler
    for layer in reversed(middleware):
        wrapped = _layer(layer, wrapped)
    return wrapped


def _layer(layer: Middleware, inner: CallNext) -> CallNext:
    async def run(call: Call) -> dict[str, Any]:
        return await layer(call, inner)

    return run


# -- the middleware herald ships ---------------------------------------------------------------


def timing(log: logging.Logger | None = None, level: int = logging.INFO) -> Middleware:
    """A log line per request: method, what it names, caller, outcome and milliseconds."""
    target = log or logger

    async def timed(call: Call, call_next: CallNext) -> dict[str, Any]:
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(call)
            outcome = "tool error" if result.get("isError") else "ok"
            return result
        except ProtocolError as error:
            outcome = f"error {error.code}"
            raise
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            named = f" {call.name}" if call.name else ""
            target.log(level, "%s%s by %s: %s in %.1f ms", call.method, named, call.caller, outcome, elapsed)

    return timed


class RateLimited(ProtocolError):
    """A caller asked more often than its rate allows; `data.retryAfterSeconds` says when to ask again."""

    code = -32029
    http_status = 429


class RateLimit:
    """A token bucket per caller (`Call.caller`): `burst` requests at once, refilled at
    `per_second`. A `tools/call` over the limit is a tool error the model reads, with the
    wait; any other request is a `RateLimited` error. Both carry `retryAfterSeconds`.

    `methods` limits only those methods (`{"tools/call"}`, say); by default every one.
    The buckets live in this process: behind a load balancer, each replica counts its own.
    """

    def __init__(
        self,
        per_second: float,
        burst: int,
        *,
        methods: frozenset[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_callers: int = 100_000,
    ) -> None:
        if per_second <= 0 or burst < 1:
            raise ValueError("a rate limit needs per_second > 0 and burst >= 1")
        self.per_second = per_second
        self.burst = burst
        self.methods = methods
        self._clock = clock
        self._max_callers = max_callers
        #: caller -> (tokens left, when they were counted)
        self._buckets: dict[str, tuple[float, float]] = {}

    async def __call__(self, call: Call, call_next: CallNext) -> dict[str, Any]:
        if self.methods is not None and call.method not in self.methods:
            return await call_next(call)
        wait = self._take(call.caller)
        if wait is None:
            return await call_next(call)
        seconds = math.ceil(wait * 10) / 10
        message = (
            f"Rate limit reached: at most {self.burst} requests at once, "
            f"{self.per_second:g} a second after that."
        )
        if call.method == "tools/call":
            return call.tool_error(
                f"{message} Wait {seconds:g} s, then call {call.name} again.",
                {"retryAfterSeconds": seconds},
            )
        raise RateLimited(f"{message} Retry in {seconds:g} s.", data={"retryAfterSeconds": seconds})

    def _take(self, caller: str) -> float | None:
        """Take a token of `caller`'s; None when there was one, else the seconds until there is."""
        now = self._clock()
        tokens, then = self._buckets.pop(caller, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.per_second)
        if len(self._buckets) >= self._max_callers:  # the oldest-used callers go first
            del self._buckets[next(iter(self._buckets))]
        if tokens >= 1:
            self._buckets[caller] = (tokens - 1, now)
            return None
        self._buckets[caller] = (tokens, now)
        return (1 - tokens) / self.per_second


def errors_as_tool_results(log: logging.Logger | None = None) -> Middleware:
    """No exception escapes a request as more than a line: one from an inner middleware or
    a handler becomes, for `tools/call`, a tool error naming the tool and nothing of the
    traceback, and for any other method a plain internal error. The traceback is logged.

    Tool functions' own exceptions are already such results (`herald.server.handlers`);
    this covers the middleware around them, which is where a team's own code runs.
    """
    target = log or logger

    async def guarded(call: Call, call_next: CallNext) -> dict[str, Any]:
        try:
            return await call_next(call)
        except ProtocolError:
            raise
        except Exception:
            target.exception("%s %s failed", call.method, call.name or "")
            if call.method == "tools/call":
                return call.tool_error(f"Tool {call.name!r} failed with an internal error; try again later.")
            raise InternalError("Internal error") from None

    return guarded
