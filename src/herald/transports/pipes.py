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
from typing import IO, Final

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


async def open_reader(
    loop: asyncio.AbstractEventLoop, stream: IO[bytes], protocol: asyncio.Protocol
) -> Callable[[], None]:
    """Feed what `stream` delivers to `protocol` (`data_received`, then `eof_received`).

    Returns what stops the reading: a pipe's transport is closed; a thread reading a file
    or a device ends at its end of file.
    """
    if is_pipe(stream):
        transport, _ = await loop.connect_read_pipe(lambda: protocol, stream)
        return transport.close
    fd = stream.fileno()

    def pump() -> None:
        while chunk := os.read(fd, READ_CHUNK):
            loop.call_soon_threadsafe(protocol.data_received, chunk)
        loop.call_soon_threadsafe(protocol.eof_received)

    threading.Thread(target=pump, name="herald-stdin", daemon=True).start()
    return lambda: None


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
