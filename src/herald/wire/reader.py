"""Reading a message log back: one `Record` a line, and a problem (never an exception) for a
line that is not a record of a version this reader knows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from herald.wire.format import FORMAT_VERSION, KINDS


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
