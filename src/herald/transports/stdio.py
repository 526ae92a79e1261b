"""MCP over stdin/stdout: newline-delimited UTF-8 JSON-RPC.

stdout carries protocol messages only; `sys.stdout` is pointed at stderr while we
serve, so a stray `print` in a tool cannot corrupt the stream. Lines are handed to the
connection as they arrive (requests run concurrently), while their answers flow: a
client that does not read them stops the reading (`herald.transports.intake`). Replies
are coalesced into one write per event-loop turn. On EOF every request in flight is
finished and its reply written out before we return; SIGTERM and SIGINT cancel what is
in flight and exit cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import secrets
import signal
import sys
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
from herald.protocol.messages import RequestId
from herald.server.app import Server
from herald.server.connection import Connection
from herald.server.outbox import Outbox
from herald.transports.intake import HIGH_WATER, Intake
from herald.transports.lines import LineSplitter
from herald.transports.pipes import Reader, open_reader, open_writer, write_all
from herald.wire.format import Sender, recorder_name
from herald.wire.writer import Flushing, MessageLog

#: Queued bytes that are written at once, without waiting for the loop's next turn.
FLUSH_BYTES = 64 * 1024
#: How long, after SIGTERM or SIGINT, what is left of stdout may take to be read.
SIGNALLED_DRAIN_SECONDS = 5.0


class StdoutOutbox(Outbox):
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

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        writer: asyncio.StreamWriter | None,
        fd: int,
        on_sent: Callable[[bytes], None] | None = None,
    ):
        self._loop = loop
        self._writer = writer
        self._fd = fd
        self._pending = bytearray()
        self._scheduled = False
        self._on_sent = on_sent
        #: Set whenever a message goes out or a request ends without one (`Intake` waits on it).
        self.changed = asyncio.Event()

    def send(self, message: Outgoing) -> None:
        data = encode(message)
        if self._on_sent is not None:
            self._on_sent(data)
        self._pending += data
        self._pending += b"\n"
        self.changed.set()
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def request_ended(self, request_id: RequestId) -> None:
        """A request ended without a reply (cancelled): JSON-RPC sends nothing, but it is over."""
        self.changed.set()

    @property
    def unwritten(self) -> int:
        """Bytes sent here that the client has not taken from the pipe yet (or not all of them)."""
        if self._writer is None:
            return len(self._pending)
        return len(self._pending) + self._writer.transport.get_write_buffer_size()

    async def drained(self) -> None:
        """Write what is pending, and wait until the pipe has taken most of it (the client read)."""
        self.flush()
        if self._writer is not None:
            with contextlib.suppress(ConnectionError):  # nobody reads any more: nothing to wait for
                await self._writer.drain()

    def flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        data = bytes(self._pending)
        self._pending.clear()
        if self._writer is not None:
            self._writer.write(data)
        else:
            write_all(self._fd, data)

    async def drain(self) -> None:
        if len(self._pending) >= FLUSH_BYTES:
            self.flush()
        if self._writer is not None and self._writer.transport.get_write_buffer_size() > HIGH_WATER:
            await self._writer.drain()

    async def aclose(self) -> None:
        """Write out everything sent, to its last byte, before the server exits.

        `drain` alone returns once the pipe's buffer is below its low-water mark, and
        what was still in it would be lost with the process: with no marks, it is empty.
        """
        self.flush()
        if self._writer is not None:
            with contextlib.suppress(ConnectionError, BrokenPipeError):
                self._writer.transport.set_write_buffer_limits(high=0)
                await self._writer.drain()


async def serve_stdio(
    server: Server,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    message_log: MessageLog | None = None,
) -> None:
    """Serve one client on stdin/stdout until EOF or a termination signal.

    With `message_log`, every line in and out is recorded as it passes (`herald.wire`).
    """
    async with Flushing(message_log):
        await _serve(
            server, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer, max_message_bytes, message_log
        )


async def _serve(
    server: Server,
    stdin: IO[bytes],
    stdout: IO[bytes],
    max_message_bytes: int,
    message_log: MessageLog | None,
) -> None:
    loop = asyncio.get_running_loop()
    recorder = _Recorder(message_log, server) if message_log is not None else None
    outbox = StdoutOutbox(
        loop,
        await open_writer(loop, stdout),
        stdout.fileno(),
        recorder.sent if recorder is not None else None,
    )
    connection = Connection(server, outbox, max_message_bytes=max_message_bytes)

    def oversize(size: int, head: bytes, tail: bytes) -> None:
        if recorder is not None:
            recorder.oversize(size, head, max_message_bytes)
        error = too_large(size, max_message_bytes, head, tail)
        outbox.send(error_response(error_id(error), error))

    receive = connection.receive_data if recorder is None else recorder.receiving(connection.receive_data)
    lifetime = contextlib.AsyncExitStack()  # the server's lifespan and jobs, left before the last drain
    await lifetime.enter_async_context(server.running())
    eof: asyncio.Future[bool] = loop.create_future()

    def take(line: bytes) -> None:
        receive(line)
        intake.took()

    def refuse(size: int, head: bytes, tail: bytes) -> None:
        oversize(size, head, tail)
        intake.took()

    def ended() -> None:  # every line before the end of input was taken in
        if not eof.done():
            eof.set_result(False)

    splitter = LineSplitter(max_message_bytes, take, refuse, ended)
    intake = Intake(connection, outbox, splitter)
    stop = _install_signal_handlers(loop, eof)
    reader: Reader | None = None
    try:
        async with connection:  # its requests' tasks live inside this block
            reader = intake.reader = await open_reader(loop, stdin, _ReadProtocol(splitter))
            try:
                cancelled = await eof
            finally:
                intake.close()
            if recorder is not None:
                recorder.ended("client", "signal" if cancelled else "eof")
            await connection.aclose(cancel=bool(cancelled))
        await lifetime.aclose()
        # Everything answered goes out; a client that signalled us may not read it, so it
        # gets a moment for that, not for ever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SIGNALLED_DRAIN_SECONDS if cancelled else None):
                await outbox.aclose()
        if recorder is not None:
            recorder.ended("server", "exit")
    finally:
        if reader is not None:
            reader.close()
        stop()
        await lifetime.aclose()  # at once after a clean end; after an error, shut down all the same


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, splitter: LineSplitter):
        self._splitter = splitter
        self._finished = False

    def data_received(self, data: bytes) -> None:
        self._splitter.feed(data)

    def eof_received(self) -> bool | None:
        self._finish()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._splitter.finish()  # the lines it still holds go first; then it calls `ended`


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


class _Recorder:
    """Writes what crosses this connection to a message log, as one stdio connection."""

    def __init__(self, log: MessageLog, server: Server) -> None:
        self.log = log
        self.session = f"stdio-{secrets.token_hex(6)}"
        log.start(
            "stdio",
            recorder_name(),
            f"{server.name} (its own --message-log)",
            session=self.session,
        )

    def receiving(self, receive: Callable[[bytes], None]) -> Callable[[bytes], None]:
        def recorded(line: bytes) -> None:
            self.log.message("client", "stdio", line, session=self.session)
            receive(line)

        return recorded

    def sent(self, data: bytes) -> None:
        self.log.message("server", "stdio", data, session=self.session)

    def oversize(self, size: int, head: bytes, limit: int) -> None:
        self.log.oversize("client", "stdio", head, size, limit, session=self.session)

    def ended(self, sender: Sender, reason: str) -> None:
        self.log.end(sender, "stdio", reason, session=self.session)


def run_stdio(
    server: Server,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    message_log: MessageLog | None = None,
) -> None:
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
        run_event_loop(
            serve_stdio(
                server, stdout=protocol_out, max_message_bytes=max_message_bytes, message_log=message_log
            )
        )
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
