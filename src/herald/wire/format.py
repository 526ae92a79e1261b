"""The message log's format: one JSON record per line, each saying what crossed the wire.

A record is written by a recorder that sits where the bytes pass (`herald record`, or a
herald server's own transport) and read back by `herald lint` and `herald log view`.
What it must keep is what people debug with: the message exactly as it arrived (a
message that is not JSON is kept as text with the parser's complaint), who sent it,
when, and where it belongs (the connection or HTTP session, the HTTP exchange, the SSE
event id). The published JSON Schema (`message-log.schema.json`, printed by `herald log
schema`) is the contract; `FORMAT_VERSION` changes when a reader would misread a record.

Kinds of record:

- `start`: a recorder began (its name and version, and the server it fronts);
- `message`: a JSON-RPC message or batch, under `message`;
- `unparsed`: bytes that are not JSON: `raw` (or `rawBase64`) and `parseError`;
- `http`: an HTTP step that carries no message (a GET that opens a stream, a 202, an
  error page), with its request line or status and headers under `http`;
- `end`: a stream or connection ended, with `reason`.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import metadata, resources
from typing import Any, Final, Literal

FORMAT_VERSION: Final = 1
#: Of one message, a recorder keeps this much: a larger one is logged as its start and its size.
MESSAGE_KEEP_BYTES: Final = 64 * 1024 * 1024

Sender = Literal["client", "server"]
Transport = Literal["stdio", "http"]

KINDS: Final = ("start", "message", "unparsed", "http", "end")

#: Header values a log must never hold: they are credentials.
REDACTED_HEADERS: Final = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
REDACTED: Final = "[redacted]"


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema every record of this version matches."""
    text = resources.files("herald.wire").joinpath("message-log.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def redact(name: str, value: str) -> str:
    """The value a header may be logged with: credentials keep their scheme and lose the rest."""
    if name not in REDACTED_HEADERS:
        return value
    scheme, _, secret = value.partition(" ")
    return f"{scheme} {REDACTED}" if secret and name.endswith("authorization") else REDACTED


def recorder_name() -> str:
    """What a `start` record names as its recorder: herald and its version."""
    return f"herald {metadata.version('herald')}"
