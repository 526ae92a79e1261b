"""The message log: what crossed the wire between an MCP client and server, one record a line.

`MessageLog` writes it (`herald record`, and herald servers run with `message_log=`),
`records` reads it back, `RecordingMiddleware` records any ASGI app's HTTP traffic, and
`schema()` is the published JSON Schema of a record.
"""

from __future__ import annotations

from herald.wire.asgi import RecordingMiddleware
from herald.wire.format import FORMAT_VERSION, schema
from herald.wire.reader import Record, records
from herald.wire.writer import Flushing, MessageLog

__all__ = ["FORMAT_VERSION", "Flushing", "MessageLog", "Record", "RecordingMiddleware", "records", "schema"]
