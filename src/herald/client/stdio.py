"""A small MCP client over a spawned server's stdin/stdout, for both eras.

It exists for the command line (`giftgenius call`) and for end-to-end tests that need
a real process. Every raw frame in either direction can be observed through `on_wire`,
which is how `--show-wire` shows the exchange exactly as the protocol defines it.

Over stdio the connection is the process: when it exits, every request in flight fails
with `ConnectionLost`, and reconnecting means starting it again from the same command
line. That is only useful when the server keeps its jobs in a durable store, which is
exactly the case `job_events` relies on.

An error response that pairs with no request in flight (a null id) fails every request
in flight with `ServerError`, because nothing says which one it is about.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import orjson

from herald.client.base import Client, ConnectionLost, ServerError
from herald.protocol.messages import JSONObject, Notification, Request, RequestId
from herald.protocol.modern import with_envelope
from herald.protocol.versions import (
    LATEST_HANDSHAKE_VERSION,
)
from herald.taskgroup import task_group

__all__ = ["CLIENT_INFO", "ServerError", "StdioClient", "WireEvent", "connect_stdio"]

CLIENT_INFO = {"name": "herald-client", "version": "0.1.0"}
#: How long a server gets to exit after its stdin closes before it is terminated.
EXIT_GRACE = 5.0
#: The longest line (one message) read from the server, in bytes. A job's result document
#: is read in one message, and a 140,000-person bulk result is about 130 MB once escaped
#: inside a JSON-RPC answer; the buffer grows only as far as the longest line needs.
READ_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WireEvent:
    """One raw frame: which way it went, when, and its bytes."""

    direction: Literal["send", "receive"]
    timestamp: float
    data: bytes


class StdioClient(Client):
    """Talks to one spawned server process. Use `StdioClient.spawn(...)` as a context manager."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        *,
        modern: bool,
        on_wire: Callable[[WireEvent], None] | None,
        argv: Sequence[str] | None = None,
        reconnect_timeout: float = 30.0,
        tasks: asyncio.TaskGroup,
        env: Mapping[str, str] | None = None,
    ):
        super().__init__(modern=modern, reconnect_timeout=reconnect_timeout)
        #: The reader of each server process is a task of the `spawn` block.
        self._tasks = tasks
        self.process = process
        self.on_wire = on_wire
        #: The command line, kept so that a server that exited can be started again.
        self.argv = list(argv) if argv is not None else None
        #: Its environment (None: this process's), for the same reason.
        self.env = dict(env) if env is not None else None
        self._waiting: dict[RequestId, asyncio.Future[JSONObject]] = {}
        self._ids = itertools.count(1)
        self._reader = tasks.create_task(self._read(process))
        self._fresh = True  # `process` has not been opened yet; the first `_reopen` uses it

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        modern: bool = False,
        on_wire: Callable[[WireEvent], None] | None = None,
        reconnect_timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> AsyncIterator[StdioClient]:
        """Start the server (with `env` as its environment, if given), connect (handshake or
        discovery), and close it cleanly afterwards."""
        process = await _start(argv, env)
        async with task_group() as tasks:
            client = cls(
                process,
                modern=modern,
                on_wire=on_wire,
                argv=argv,
                reconnect_timeout=reconnect_timeout,
                tasks=tasks,
                env=env,
            )
            try:
                await client.connect()
                yield client
            finally:
                await client.aclose()

    async def _reopen(self) -> JSONObject:
        if not self._fresh:
            await self._respawn()
        self._fresh = False
        if self.modern:
            result = await self.request("server/discover")
            self.server_info = result.get("_meta", {}).get("io.modelcontextprotocol/serverInfo")
            return result
        result = await self.request(
            "initialize",
            {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self.server_info = result.get("serverInfo")
        await self.notify("notifications/initialized")
        return result

    async def _respawn(self) -> None:
        """Replace the exited (or stuck) server process with a new one from the same command line."""
        if self.argv is None:
            raise ConnectionLost("the server exited and this client does not know how to start it")
        await self._stop_process()
        try:
            self.process = await _start(self.argv, self.env)
        except OSError as exc:
            raise ConnectionLost(f"cannot start the server: {exc}") from exc
        self._reader = self._tasks.create_task(self._read(self.process))

    async def _request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        request_id = next(self._ids)
        if self.modern:
            params = with_envelope(params, capabilities={}, client_info=CLIENT_INFO)
        if self._reader.done():
            raise ConnectionLost("the server has exited")
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            await self._send(Request(request_id, method, params).to_json())
            response = await future
        finally:
            self._waiting.pop(request_id, None)
        if "error" in response:
            raise ServerError(response["error"])
        result: JSONObject = response["result"]
        return result

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        await self._send(Notification(method, params).to_json())

    async def _send(self, message: JSONObject) -> None:
        data = orjson.dumps(message)
        if self.on_wire is not None:
            self.on_wire(WireEvent("send", time.time(), data))
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise ConnectionLost("the server's input is closed")
        try:
            stdin.write(data + b"\n")
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ConnectionLost(f"the server stopped reading: {exc}") from exc

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        """Read one process's output until it ends; then fail what waits and tell the followers."""
        assert process.stdout is not None
        closed = ConnectionLost("the server closed its output")
        try:
            while line := await process.stdout.readline():
                if self.on_wire is not None:
                    self.on_wire(WireEvent("receive", time.time(), line.rstrip(b"\n")))
                message = orjson.loads(line)
                if "method" in message:
                    self._received(message)
                elif (future := self._pending(message.get("id"))) is not None:
                    future.set_result(message)
                elif "error" in message:
                    self._fail_unpaired(message)
        except ConnectionError:
            pass  # a broken pipe ends this process's conversation like EOF does
        except ValueError as exc:
            # So does a garbled line, or one longer than READ_LIMIT; say which, because to
            # the user "the server closed its output" would be a lie.
            closed = ConnectionLost(f"cannot read the server's output: {exc}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(closed)
        self._waiting.clear()
        self._dropped()

    def _pending(self, response_id: object) -> asyncio.Future[JSONObject] | None:
        """The future of the request `response_id` answers, taken out of the waiting table."""
        if isinstance(response_id, bool) or not isinstance(response_id, int | str):
            return None
        return self._waiting.pop(response_id, None)

    def _fail_unpaired(self, message: JSONObject) -> None:
        """An error no request pairs with fails every request in flight.

        The server answers stdio messages in any order, so nothing says which of them the
        error is about; failing them all with the server's words is the only choice that
        leaves none waiting forever. (herald servers answer an oversize or invalid request
        with its id whenever it can be read, so this is rare: a line that was not JSON.)
        """
        self.unpaired_errors.append(message)
        waiting = list(self._waiting.values())
        self._waiting.clear()
        for future in waiting:
            if not future.done():
                future.set_result(message)

    async def _stop_process(self) -> None:
        """Close stdin (the stdio shutdown signal), wait for the exit, then for the reader."""
        process = self.process
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), timeout=EXIT_GRACE)
        except TimeoutError:
            process.terminate()
            await process.wait()
        await self._reader

    async def aclose(self) -> None:
        """Close stdin (the stdio shutdown signal) and wait for the server to exit."""
        await self._stop_process()


async def _start(argv: Sequence[str], env: Mapping[str, str] | None = None) -> asyncio.subprocess.Process:
    """Start the server in a session of its own: Ctrl-C in the terminal is the client's to
    handle (it may still want to ask the server something, such as to cancel a job); the
    server stops when the client closes its stdin, or when the client dies."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=READ_LIMIT,
        start_new_session=True,
        env=env,
    )


@contextlib.asynccontextmanager
async def connect_stdio(
    argv: Sequence[str],
    modern: bool = False,
    *,
    on_wire: Callable[[WireEvent], None] | None = None,
    reconnect_timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[StdioClient]:
    """Start the server `argv` (with `env` as its environment, if given) and talk to it over
    stdio in the chosen era; stop it on exit."""
    async with StdioClient.spawn(
        argv, modern=modern, on_wire=on_wire, reconnect_timeout=reconnect_timeout, env=env
    ) as client:
        yield client
