"""The standard streams as the event loop can use them: pipes watched by the loop, anything else
read in a thread and written directly.

A client gives a stdio server pipes (or sockets). A person may give it a file
(`server < requests.jsonl`) or a device: regular files cannot be watched by the loop, and
uvloop aborts the process on a character device such as `/dev/null`. Shared by the
stdio transport and the stdio recorder (`herald record -- CMD`).
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from collections.abc import Callable
from typing import IO, Final, Protocol

READ_CHUNK: Final = 256 * 1024


def is_pipe(stream: IO[bytes]) -> bool:
    """Whether the loop can watch `stream`: a pipe or a socket."""
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def open_writer(
    loop: asyncio.AbstractEventLoop, stream: IO[bytes], on_full: Callable[[bool], None] | None = None
) -> asyncio.StreamWriter | None:
    """A writer for a pipe; None for anything else, which is written with `write_all`.

    `on_full(True)` is called when the pipe's reader falls behind and the writer's buffer
    passes its high-water mark, `on_full(False)` when it has drained: what lets a
    producer that cannot await `drain()` (a protocol's callback) stop and go on.
    """
    if not is_pipe(stream):
        return None  # written to directly: writes to files and devices do not wait on a reader
    transport, protocol = await loop.connect_write_pipe(lambda: _FlowControl(on_full), stream)
    return asyncio.StreamWriter(transport, protocol, None, loop)


class _FlowControl(asyncio.streams.FlowControlMixin):
    """`drain()` for the writer, and the buffer's state to `on_full`."""

    def __init__(self, on_full: Callable[[bool], None] | None) -> None:
        super().__init__()
        self._on_full = on_full

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._on_full is not None:
            self._on_full(True)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._on_full is not None:
            self._on_full(False)


class Reader(Protocol):
    """What reads a stream for the loop: it can stop for a while (back-pressure), and for good."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def close(self) -> None: ...


async def open_reader(
    loop: asyncio.AbstractEventLoop, stream: IO[bytes], protocol: asyncio.Protocol
) -> Reader:
    """Feed what `stream` delivers to `protocol` (`data_received`, then `eof_received`).

    A pipe is read by the loop (its transport is the reader); a file or a device by a
    thread, which ends at its end of file, or when closed.
    """
    if is_pipe(stream):
        transport, _ = await loop.connect_read_pipe(lambda: protocol, stream)
        return _PipeReader(transport)
    return _ThreadReader(loop, stream.fileno(), protocol)


class _PipeReader:
    def __init__(self, transport: asyncio.ReadTransport) -> None:
        self._transport = transport

    def pause(self) -> None:
        if self._transport.is_reading():
            self._transport.pause_reading()

    def resume(self) -> None:
        if not self._transport.is_closing() and not self._transport.is_reading():
            self._transport.resume_reading()

    def close(self) -> None:
        self._transport.close()


class _ThreadReader:
    """Reads a file or a device in a thread, a chunk at a time: the next read waits until the
    loop has taken the last chunk in, and for `resume` while paused."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, protocol: asyncio.Protocol) -> None:
        self._loop = loop
        self._protocol = protocol
        self._paused = False
        self._closed = False
        self._may_read = threading.Event()
        self._may_read.set()
        threading.Thread(target=self._pump, args=(fd,), name="herald-stdin", daemon=True).start()

    def _pump(self, fd: int) -> None:
        while True:
            self._may_read.wait()
            self._may_read.clear()
            if self._closed:
                return
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                break
            self._loop.call_soon_threadsafe(self._deliver, chunk)
        self._loop.call_soon_threadsafe(self._protocol.eof_received)

    def _deliver(self, chunk: bytes) -> None:
        self._protocol.data_received(chunk)
        if not self._paused:
            self._may_read.set()

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        if self._paused:
            self._paused = False
            self._may_read.set()

    def close(self) -> None:
        self._closed = True
        self._may_read.set()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
