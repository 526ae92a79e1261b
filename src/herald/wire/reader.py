"""Reading a message log back: one `Record` a line, and a problem (never an exception) for a
line that is not a record of a version this reader knows.

`line_batches` reads a log from a stream in flat memory: a line longer than
`RECORD_LIMIT` (longer than any record a herald recorder writes) is passed over as it
streams by, never held whole, and said as a `LongLine` in its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Final

import orjson

from herald.wire.format import FORMAT_VERSION, KINDS, MESSAGE_KEEP_BYTES

#: The longest line that is read as a record: a message a recorder keeps whole, with room
#: for its record's fields.
RECORD_LIMIT: Final = MESSAGE_KEEP_BYTES + 1024 * 1024
#: How much of a log is read at a time.
READ_BYTES: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class Record:
    line: int
    kind: str = ""
    sender: str = ""
    time: str | None = None
    session: str | None = None
    stream: str | None = None
    message: Any = None
    #: The whole record, for the fields of its kind.
    fields: dict[str, Any] = field(default_factory=dict)
    #: Why the line is not a record, if it is not.
    problem: str | None = None


def records(lines: Iterable[bytes]) -> Iterator[Record]:
    """The records of a log's lines (blank lines are skipped)."""
    for number, line in enumerate(lines, 1):
        if line.isspace() or not line:
            continue
        yield read_record(line, number)


def read_record(line: bytes, number: int) -> Record:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as bad:
        return Record(number, problem=f"line {number} is not JSON: {bad}")
    if not isinstance(value, dict):
        return Record(number, problem=f"line {number} is not a JSON object")
    if value.get("v") != FORMAT_VERSION:
        return Record(
            number, problem=f"line {number} has format version {value.get('v')!r}, not {FORMAT_VERSION}"
        )
    kind, sender = value.get("kind"), value.get("from")
    if kind not in KINDS or sender not in ("client", "server", "recorder"):
        return Record(number, problem=f"line {number} is a record of kind {kind!r} from {sender!r}")
    session, stream, time = value.get("session"), value.get("stream"), value.get("time")
    return Record(
        number,
        kind,
        sender,
        time if isinstance(time, str) else None,
        session if isinstance(session, str) else None,
        stream if isinstance(stream, str) else None,
        value.get("message"),
        value,
    )


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line over the limit, passed over unread: only its size in bytes is known."""

    size: int


def line_batches(stream: IO[bytes], limit: int = RECORD_LIMIT) -> Iterator[list[bytes] | LongLine]:
    """The lines of the log in `stream`, in order and without their newlines, a batch per read;
    a line longer than `limit` bytes comes alone, as a `LongLine`.

    The log is read `READ_BYTES` at a time, and a line that runs on past a read is held
    only while it stays within `limit`: past that it is counted, not kept. Batches let
    the caller walk the lines of each read at the speed of a list.
    """
    size = min(READ_BYTES, limit)  # so a line within one read is within the limit
    start = bytearray()  # the start of a line that runs on past the last read
    passing: int | None = None  # the bytes so far of a line over the limit
    while chunk := stream.read(size):
        lines = chunk.split(b"\n")
        rest = lines.pop()  # after the last newline: the start of a line that runs on
        if lines:  # the line that ran on ends here
            first = lines[0]
            if passing is not None:
                yield LongLine(passing + len(first))
                del lines[0]
            elif start:
                if len(start) + len(first) > limit:
                    yield LongLine(len(start) + len(first))
                    del lines[0]
                else:
                    lines[0] = bytes(start) + first
                start.clear()
            passing = None
            if lines:
                yield lines
        if passing is not None:
            passing += len(rest)
        elif len(start) + len(rest) > limit:
            passing = len(start) + len(rest)
            start.clear()
        else:
            start += rest
    if passing is not None:
        yield LongLine(passing)
    elif start:
        yield [bytes(start)]
