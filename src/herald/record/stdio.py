"""`herald record -- CMD ARGS…`: a stdio MCP server with a recorder in its pipes.

The host starts `herald record -- server args` where it would start `server args`. The
recorder starts the server with pipes for its stdin and stdout (stderr is the
recorder's own, so the server's logs reach the host as before) and passes bytes on the
moment they arrive, in both directions: it does not wait for a line to end. Beside
that, each direction is cut into lines and each line is written to the log. Each way,
a reader that falls behind holds its writer back: while the server's stdin or the
host's stdout has a full buffer, the recorder stops reading the other side, so what
waits in the recorder stays bounded and the writer's own writes block as they would
without it.

It ends as the server ends: end of input from the host is passed on as the end of the
server's stdin, SIGINT and SIGTERM are passed on to the server, and the recorder exits
with the server's status once the server's stdout is drained.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import IO, cast

from herald.transports.lines import LineSplitter
from herald.transports.pipes import open_reader, open_writer, write_all
from herald.wire.format import MESSAGE_KEEP_BYTES, Sender, recorder_name
from herald.wire.writer import Flushing, MessageLog


class ServerDidNotStart(Exception):
    """The command could not be started (not found, not executable)."""


async def record_stdio(
    argv: Sequence[str],
    open_log: Callable[[], MessageLog] | None,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> int:
    """Run `argv` as a stdio MCP server between our stdin/stdout and it; returns its exit status.

    The log is opened (`open_log`) only once the server has started, so a command that
    does not exist leaves no empty log behind. Without `open_log` it is a plain pass-through,
    what `bench/record_overhead.py` sets recording against.
    """
    loop = asyncio.get_running_loop()
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    server = _Server(loop, stdout.fileno())
    to_client = server.to_client = await open_writer(loop, stdout, server.hold_output)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: server, *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
        )
    except OSError as failed:
        raise ServerDidNotStart(f"cannot start {argv[0]!r}: {failed.strerror or failed}") from None
    log = open_log() if open_log is not None else None
    session = f"stdio-{secrets.token_hex(6)}"
    if log is not None:
        log.start("stdio", recorder_name(), shlex.join(argv), session=session)
        server.recording(log, session)
    client = _Client(server, transport, log, session)
    reader = await open_reader(loop, stdin, client)
    forwarded = _forward_signals(loop, transport)
    try:
        async with Flushing(log):
            await server.exited
            await server.drained
            status = transport.get_returncode()
            # A server killed by signal N exits, as a shell says it, with 128 + N.
            code = 1 if status is None else status if status >= 0 else 128 - status
            if log is not None:
                log.end("server", "stdio", f"exit {status}", session=session)
            if to_client is not None:
                with contextlib.suppress(ConnectionError):
                    await to_client.drain()
    finally:
        for signum in forwarded:
            loop.remove_signal_handler(signum)
        reader.close()
        transport.close()
        if log is not None:
            log.close()
    return code


class _Server(asyncio.SubprocessProtocol):
    """The server's side: what it writes goes to the client at once, and line by line to the log."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        #: The host's stdout when it is a pipe (else written to `fd` directly).
        self.to_client: asyncio.StreamWriter | None = None
        self._fd = fd
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()
        self.paused_client: Callable[[bool], None] | None = None
        self._output: asyncio.ReadTransport | None = None
        self._lines: LineSplitter | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        pipe = cast(asyncio.SubprocessTransport, transport).get_pipe_transport(1)
        self._output = cast(asyncio.ReadTransport, pipe)

    def recording(self, log: MessageLog, session: str) -> None:
        self._lines = _lines(log, "server", session)

    def hold_output(self, held: bool) -> None:
        """The host reads slower than the server writes: stop reading the server until it catches up."""
        if self._output is not None and not self._output.is_closing():
            (self._output.pause_reading if held else self._output.resume_reading)()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if self.to_client is not None:
            self.to_client.write(data)
        else:
            write_all(self._fd, data)
        if self._lines is not None:
            self._lines.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.drained.done():
            if self._lines is not None:
                self._lines.finish()
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    # The server reads slower than the client writes: stop reading the client until it catches up.
    def pause_writing(self) -> None:
        if self.paused_client is not None:
            self.paused_client(True)

    def resume_writing(self) -> None:
        if self.paused_client is not None:
            self.paused_client(False)


class _Client(asyncio.Protocol):
    """The client's side: what it writes goes to the server at once, and line by line to the log."""

    def __init__(
        self, server: _Server, transport: asyncio.SubprocessTransport, log: MessageLog | None, session: str
    ) -> None:
        # uvloop's pipe transports are write transports without deriving from the ABC.
        self._to_server = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        self._lines = _lines(log, "client", session) if log is not None else None
        self._log = log
        self._session = session
        self._reading: asyncio.ReadTransport | None = None
        server.paused_client = self._pause

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._reading = cast(asyncio.ReadTransport, transport)

    def _pause(self, paused: bool) -> None:
        if self._reading is not None:
            (self._reading.pause_reading if paused else self._reading.resume_reading)()

    def data_received(self, data: bytes) -> None:
        if not self._to_server.is_closing():
            self._to_server.write(data)
        if self._lines is not None:
            self._lines.feed(data)

    def eof_received(self) -> bool | None:
        if self._lines is not None and self._log is not None:
            self._lines.finish()
            self._log.end("client", "stdio", "eof", session=self._session)
        if not self._to_server.is_closing():
            self._to_server.close()  # the server reads its end of input
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._to_server.is_closing():
            self.eof_received()


def _lines(log: MessageLog, sender: Sender, session: str) -> LineSplitter:
    def line(data: bytes) -> None:
        log.message(sender, "stdio", data.removesuffix(b"\r"), session=session)

    def oversize(size: int, head: bytes, _tail: bytes) -> None:
        log.oversize(sender, "stdio", head, size, MESSAGE_KEEP_BYTES, session=session)

    # A longer line is logged as its start and its size; it is still passed on whole.
    return LineSplitter(MESSAGE_KEEP_BYTES, line, oversize)


def _forward_signals(loop: asyncio.AbstractEventLoop, transport: asyncio.SubprocessTransport) -> list[int]:
    """SIGINT and SIGTERM go to the server, which decides how to end; we end when it does."""
    installed: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, _passer(transport, signum))
            installed.append(signum)
    return installed


def _passer(transport: asyncio.SubprocessTransport, signum: int) -> Callable[[], None]:
    def pass_on() -> None:
        with contextlib.suppress(ProcessLookupError):
            transport.send_signal(signum)

    return pass_on
