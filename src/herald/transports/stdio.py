"""MCP over stdin/stdout: newline-delimited UTF-8 JSON-RPC.

stdout carries protocol messages only; `sys.stdout` is pointed at stderr while we
serve, so a stray `print` in a tool cannot corrupt the stream. Lines are handed to the
connection as they arrive (requests run concurrently); replies are coalesced into one
write per event-loop turn. On EOF every request in flight is finished and its reply
flushed before we return; SIGTERM and SIGINT cancel what is in flight and exit cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import IO, Any

from herald.protocol.codec import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Outgoing,
    encode,
    error_id,
    error_response,
    too_large,
)
from herald.server.app import Server
from herald.server.connection import Connection
from herald.transports.lines import LineSplitter

#: Queued bytes that are written at once, without waiting for the loop's next turn.
FLUSH_BYTES = 64 * 1024
#: Above this many bytes in the pipe transport's buffer, producers (progress, logs) wait.
HIGH_WATER = 256 * 1024
READ_CHUNK = 256 * 1024


class StdoutOutbox:
    """Coalescing writer over an asyncio write transport (or a plain file descriptor).

    Messages are encoded as they are sent into one buffer, which is written once per
    event-loop turn, so a burst of replies or notifications costs one system call, not
    one each. A producer that never yields (a tool reporting progress in a tight loop:
    `drain` suspends only under back-pressure) would hold its whole burst back until it
    finished, so `drain` also writes out the buffer once it reaches `FLUSH_BYTES`.

    The buffer is a `bytearray` rather than a list of encoded messages: its length is
    the pending byte count at no cost (`drain` runs once per notification), and it
    keeps no message object alive. orjson's output keeps a 4 KiB allocation however
    short the JSON, so a list of 800 pending notifications held over 3 MiB.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter | None, fd: int):
        self._loop = loop
        self._writer = writer
        self._fd = fd
        self._pending = bytearray()
        self._scheduled = False

    def send(self, message: Outgoing) -> None:
        self._pending += encode(message)
        self._pending += b"\n"
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        data = bytes(self._pending)
        self._pending.clear()
        if self._writer is not None:
            self._writer.write(data)
        else:
            _write_all(self._fd, data)

    async def drain(self) -> None:
        if len(self._pending) >= FLUSH_BYTES:
            self.flush()
        if self._writer is not None and self._writer.transport.get_write_buffer_size() > HIGH_WATER:
            await self._writer.drain()

    async def aclose(self) -> None:
        self.flush()
        if self._writer is not None:
            with contextlib.suppress(ConnectionError, BrokenPipeError):
                await self._writer.drain()


async def serve_stdio(
    server: Server,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Serve one client on stdin/stdout until EOF or a termination signal."""
    loop = asyncio.get_running_loop()
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    outbox = StdoutOutbox(loop, await _open_writer(loop, stdout), stdout.fileno())
    connection = Connection(server, outbox, max_message_bytes=max_message_bytes)

    def oversize(size: int, head: bytes, tail: bytes) -> None:
        error = too_large(size, max_message_bytes, head, tail)
        outbox.send(error_response(error_id(error), error))

    await server.start_jobs()
    splitter = LineSplitter(max_message_bytes, connection.receive_data, oversize)
    eof = loop.create_future()
    stop = _install_signal_handlers(loop, eof)
    closer: Callable[[], None] | None = None
    try:
        async with connection:  # its requests' tasks live inside this block
            closer = await _open_reader(loop, stdin, splitter, eof)
            cancelled = await eof
            await connection.aclose(cancel=bool(cancelled))
        await server.stop_jobs()
        await outbox.aclose()
    finally:
        if closer is not None:
            closer()
        stop()


def _is_pipe(stream: IO[bytes]) -> bool:
    """Whether the loop can watch `stream`: a pipe or a socket, which is what a client gives us.

    Anything else is read and written directly: regular files cannot be watched, and
    uvloop aborts the process on a character device such as `/dev/null`.
    """
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _open_writer(loop: asyncio.AbstractEventLoop, stream: IO[bytes]) -> asyncio.StreamWriter | None:
    if not _is_pipe(stream):
        return None  # written to directly: writes to files and devices do not wait on a reader
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stream)
    return asyncio.StreamWriter(transport, protocol, None, loop)


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, splitter: LineSplitter, eof: asyncio.Future[bool]):
        self._splitter = splitter
        self._eof = eof

    def data_received(self, data: bytes) -> None:
        self._splitter.feed(data)

    def eof_received(self) -> bool | None:
        self._finish()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self._eof.done():
            self._splitter.finish()
            self._eof.set_result(False)


async def _open_reader(
    loop: asyncio.AbstractEventLoop, stream: IO[bytes], splitter: LineSplitter, eof: asyncio.Future[bool]
) -> Any:
    protocol = _ReadProtocol(splitter, eof)
    if _is_pipe(stream):
        transport, _ = await loop.connect_read_pipe(lambda: protocol, stream)
        return transport.close
    # A file (`server < requests.jsonl`) or a device cannot be watched by the loop: read it in a thread.
    fd = stream.fileno()

    def pump() -> None:
        while chunk := os.read(fd, READ_CHUNK):
            loop.call_soon_threadsafe(protocol.data_received, chunk)
        loop.call_soon_threadsafe(protocol.eof_received)

    threading.Thread(target=pump, name="herald-stdin", daemon=True).start()
    return lambda: None


def _install_signal_handlers(loop: asyncio.AbstractEventLoop, eof: asyncio.Future[bool]) -> Any:
    def terminate() -> None:
        if not eof.done():
            eof.set_result(True)

    installed = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, terminate)
            installed.append(signum)

    def remove() -> None:
        for signum in installed:
            loop.remove_signal_handler(signum)

    return remove


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def run_stdio(server: Server, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
    """Blocking entry point: serve on the process's stdin/stdout, logs on stderr."""
    if not logging.getLogger().handlers:
        logging.basicConfig(
            stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
        )
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol stream
    # Everything loaded so far (schemas, wire types, the registry) lives as long as the
    # process: keep it out of the collector's generations so full collections stay short.
    # (No collect first: imports leave no garbage, and a full pass costs ~20 ms of start-up.)
    gc.freeze()
    try:
        run_event_loop(serve_stdio(server, stdout=protocol_out, max_message_bytes=max_message_bytes))
    finally:
        protocol_out.close()


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop where it is installed: it halves the per-request loop overhead."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency wherever it builds
        asyncio.run(main)
    else:
        uvloop.run(main)
