"""The sans-IO MCP protocol core: bytes in, messages out, rules as data.

Nothing in this package performs I/O or imports an I/O library; a test walks its
imports to keep it that way.
"""

from herald.protocol.codec import Batch, decode, encode
from herald.protocol.errors import (
    HeaderMismatch,
    HeraldError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MessageTooLarge,
    MethodNotFound,
    MissingClientCapability,
    ParseError,
    ProgressError,
    ProtocolError,
    ResourceNotFound,
    ToolError,
    UnsupportedProtocolVersion,
)
from herald.protocol.messages import ErrorResponse, Message, Notification, Request, RequestId, Response

__all__ = [
    "Batch",
    "ErrorResponse",
    "HeaderMismatch",
    "HeraldError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "Message",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingClientCapability",
    "Notification",
    "ParseError",
    "ProgressError",
    "ProtocolError",
    "Request",
    "RequestId",
    "ResourceNotFound",
    "Response",
    "ToolError",
    "UnsupportedProtocolVersion",
    "decode",
    "encode",
]
