"""What a tool, resource or prompt function sees of the request it serves.

The context sends request-scoped messages (progress, log lines) on the request's own
outbox, so on HTTP they travel on that request's stream and never reach another
session. Progress must increase: a value that does not raises `ProgressError` here, in
the author's code, instead of confusing a client's progress bar.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from herald.protocol.errors import ProgressError
from herald.protocol.messages import Notification, RequestId
from herald.server.logging_levels import LogLevel, passes
from herald.server.outbox import Outbox

if TYPE_CHECKING:
    from herald.server.app import Server


@dataclass(slots=True)
class Context:
    """The request context handed to user functions that ask for it by annotation."""

    server: Server
    request_id: RequestId
    protocol_version: str
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    outbox: Outbox
    progress_token: str | int | None = None
    log_threshold: str | None = None
    _last_progress: float | None = field(default=None, repr=False)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send `notifications/progress` for this request, if the client asked for it."""
        if self._last_progress is not None and progress <= self._last_progress:
            raise ProgressError(f"progress must increase: {progress} after {self._last_progress}")
        if total is not None and progress > total:
            raise ProgressError(f"progress {progress} exceeds the total {total}")
        self._last_progress = progress
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.outbox.send(Notification("notifications/progress", params))
        await self.outbox.drain()

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send `notifications/message` if the client's log level lets `level` through."""
        if not passes(level, self.log_threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.outbox.send(Notification("notifications/message", params))
        await self.outbox.drain()

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared `capability` (e.g. "sampling", "elicitation")."""
        return capability in self.client_capabilities

    @staticmethod
    async def checkpoint() -> None:
        """Give cancellation a chance in long CPU-bound loops."""
        await asyncio.sleep(0)
