"""Writing the message log: one record a line, cheap enough to leave on in production.

A recorder calls `MessageLog.message` with the bytes it saw, as it passes them on. The
bytes are parsed once to tell a message from garbage; a message whose bytes can stand
in a line as they are is written as they are (`orjson.Fragment`), so key order, number
spelling and escapes are the sender's own. Records go into a buffer that is written
when it fills and at least every `FLUSH_SECONDS` by whoever owns the log (a recorder's
timer, or `flush()` at the end), so a busy stream costs no system call per message.
Nothing here raises for what was on the wire.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import IO, Any, Final

import orjson

from herald.private_files import private_opener
from herald.wire.format import FORMAT_VERSION, Sender, Transport, redact

logger = logging.getLogger("herald.wire")

#: How long a record may wait in the buffer, at most, when its owner runs a flush timer.
FLUSH_SECONDS: Final = 0.2
#: Buffered bytes that are written at once.
FLUSH_BYTES: Final = 256 * 1024
#: Of bytes that are not JSON, this much is kept (with the whole size).
UNPARSED_KEEP_BYTES: Final = 1024 * 1024


class MessageLog:
    """An open message log. Records are buffered; `flush()` writes them, `close()` ends the log."""

    def __init__(self, file: IO[bytes], *, clock: Callable[[], float] = time.time) -> None:
        self._file = file
        self._clock = clock
        self._buffer = bytearray()
        self._second = -1
        self._second_text = ""
        self.closed = False

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> MessageLog:
        """Append to the log at `path`, creating it (and not its directory) if need be.

        A new log is readable by its owner alone: it holds every message, arguments and all.
        """
        return cls(open(path, "ab", opener=private_opener))

    @property
    def name(self) -> str:
        return str(getattr(self._file, "name", "<stream>"))

    # -- records ------------------------------------------------------------------------------

    def start(self, transport: Transport, recorder: str, target: str, *, session: str | None = None) -> None:
        """A recorder began; `target` is the server it records (a command line or a URL)."""
        self._write(
            {"kind": "start", "from": "recorder", "transport": transport, "session": session}
            | {"recorder": recorder, "target": target}
        )

    def message(
        self,
        sender: Sender,
        transport: Transport,
        data: bytes,
        *,
        session: str | None = None,
        stream: str | None = None,
        event_id: str | None = None,
        http: Mapping[str, Any] | None = None,
    ) -> None:
        """What `sender` sent: a message, or, if `data` is not JSON, the bytes and why not."""
        record: dict[str, Any] = {"kind": "message", "from": sender, "transport": transport}
        record["session"] = session
        if stream is not None:
            record["stream"] = stream
        if event_id is not None:
            record["eventId"] = event_id
        if http is not None:
            record["http"] = http
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError as error:
            record["kind"] = "unparsed"
            record.update(_unparsed(data, str(error)))
        else:
            inline = b"\n" not in data and b"\r" not in data
            record["message"] = orjson.Fragment(data) if inline else orjson.loads(data)
        self._write(record)

    def oversize(
        self,
        sender: Sender,
        transport: Transport,
        head: bytes,
        size: int,
        limit: int,
        *,
        session: str | None,
        stream: str | None = None,
        event_id: str | None = None,
        http: Mapping[str, Any] | None = None,
    ) -> None:
        """A message too large to keep: its first bytes, its size and the limit it broke."""
        record: dict[str, Any] = {
            "kind": "unparsed",
            "from": sender,
            "transport": transport,
            "session": session,
        }
        if stream is not None:
            record["stream"] = stream
        if event_id is not None:
            record["eventId"] = event_id
        if http is not None:
            record["http"] = http
        record.update(_unparsed(head, f"{size} bytes, over the limit of {limit}: only the start is kept"))
        record["size"] = size
        self._write(record)

    def http(
        self,
        sender: Sender,
        *,
        session: str | None,
        stream: str | None,
        http: Mapping[str, Any],
    ) -> None:
        """An HTTP step with no message in it: a GET or DELETE, a 202, a status with a page."""
        self._write(
            {"kind": "http", "from": sender, "transport": "http", "session": session}
            | {"stream": stream, "http": http}
        )

    def end(
        self,
        sender: Sender,
        transport: Transport,
        reason: str,
        *,
        session: str | None = None,
        stream: str | None = None,
    ) -> None:
        """What `sender` was sending on ended (a stream closed, a process exited)."""
        record: dict[str, Any] = {"kind": "end", "from": sender, "transport": transport, "session": session}
        if stream is not None:
            record["stream"] = stream
        record["reason"] = reason
        self._write(record)

    # -- buffer -------------------------------------------------------------------------------

    def _write(self, record: dict[str, Any]) -> None:
        if self.closed:
            return
        self._buffer += orjson.dumps({"v": FORMAT_VERSION, "time": self._now()} | record)
        self._buffer += b"\n"
        if len(self._buffer) >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered. A log that cannot be written (a full disk) stops, once, with a
        warning: recording must never stop the traffic it records."""
        if self._buffer and not self.closed:
            try:
                self._file.write(self._buffer)
                self._file.flush()
            except OSError as failed:
                logger.warning("message log %s: cannot write (%s); recording stops", self.name, failed)
                self.closed = True
            self._buffer.clear()

    def close(self) -> None:
        """Write what is buffered and close the file; later records are dropped."""
        if not self.closed:
            self.flush()
            self.closed = True
            self._file.close()

    def _now(self) -> str:
        """RFC 3339 in UTC with microseconds; the part up to the second is made once a second."""
        now = self._clock()
        second = int(now)
        if second != self._second:
            self._second = second
            self._second_text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._second_text}.{int((now - second) * 1_000_000):06d}Z"


def header_map(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers as a log keeps them: lower-case names, credentials redacted."""
    return {name: redact(name, value) for name, value in headers.items()}


def _unparsed(data: bytes, error: str) -> dict[str, Any]:
    kept = data[:UNPARSED_KEEP_BYTES]
    fields: dict[str, Any] = {}
    try:
        fields["raw"] = kept.decode("utf-8")
    except UnicodeDecodeError as bad:
        if len(kept) < len(data) and bad.start >= len(kept) - 3:  # the cut split a character
            fields["raw"] = kept[: bad.start].decode("utf-8", errors="replace")
        else:
            fields["rawBase64"] = base64.b64encode(kept).decode("ascii")
    if len(kept) < len(data):
        fields["size"] = len(data)
    fields["parseError"] = error
    return fields


class Flushing:
    """While entered, writes the log's buffer every `FLUSH_SECONDS` on the running loop; flushes on exit.

    A timer, not a task: it owns nothing that could outlive the block, and a log that is
    idle costs one callback per period.
    """

    def __init__(self, log: MessageLog | None, every: float = FLUSH_SECONDS) -> None:
        self._log = log
        self._every = every
        self._timer: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> MessageLog | None:
        if self._log is not None:
            self._schedule()
        return self._log

    def _schedule(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._every, self._tick)

    def _tick(self) -> None:
        assert self._log is not None
        self._log.flush()
        self._schedule()

    async def __aexit__(self, *_: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._log is not None:
            self._log.flush()
