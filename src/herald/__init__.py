"""herald: a fast, exact runtime for Model Context Protocol servers."""

from herald.content import PromptResult, ToolResult
from herald.launch import Server
from herald.protocol.errors import HeraldError, ProgressError, ProtocolError, ToolError
from herald.runtime.context import JobContext, JobFailure
from herald.runtime.threaded import SyncJobContext
from herald.server.context import Context
from herald.server.files import FileRef
from herald.server.lifespan import FromLifespan
from herald.server.uploads import Upload
from herald.server.widgets import ToolUI, Widget, WidgetCSP

__all__ = [
    "Context",
    "FileRef",
    "FromLifespan",
    "HeraldError",
    "JobContext",
    "JobFailure",
    "ProgressError",
    "PromptResult",
    "ProtocolError",
    "Server",
    "SyncJobContext",
    "ToolError",
    "ToolResult",
    "ToolUI",
    "Upload",
    "Widget",
    "WidgetCSP",
]
