"""herald: a fast, exact runtime for Model Context Protocol servers."""

from herald.content import PromptResult, ToolResult
from herald.protocol.errors import HeraldError, ProgressError, ProtocolError, ToolError
from herald.server.app import Server
from herald.server.context import Context
from herald.server.widgets import ToolUI, Widget, WidgetCSP

__all__ = [
    "Context",
    "HeraldError",
    "ProgressError",
    "PromptResult",
    "ProtocolError",
    "Server",
    "ToolError",
    "ToolResult",
    "ToolUI",
    "Widget",
    "WidgetCSP",
]
