"""One error class per failure, each knowing its JSON-RPC code and HTTP status.

Errors are raised where the failure is found and converted to wire messages only at
the boundary (the connection turns them into error responses, the HTTP transport into
status codes). `ProtocolError.data` carries structured detail that belongs on the wire;
anything private stays in the exception chain and goes to the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from herald.protocol.versions import Era


class HeraldError(Exception):
    """Root of every error herald raises on purpose."""


class ProtocolError(HeraldError):
    """A request that cannot be answered with a result; becomes a JSON-RPC error response."""

    code: int = -32603
    http_status: int = 500

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_error_object(self) -> dict[str, Any]:
        """The `error` member of a JSON-RPC error response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(ProtocolError):
    """The bytes are not JSON (or not UTF-8)."""

    code = -32700
    http_status = 400


class InvalidRequest(ProtocolError):
    """The JSON is not a valid JSON-RPC 2.0 message, or breaks a session rule.

    `request_id` is the id to answer with when the broken message still had a usable
    one; JSON-RPC answers with a null id otherwise.
    """

    code = -32600
    http_status = 400

    def __init__(self, message: str, *, data: Any = None, request_id: int | str | None = None) -> None:
        super().__init__(message, data=data)
        self.request_id = request_id


class MessageTooLarge(InvalidRequest):
    """The message is bigger than the configured limit; nothing of it was parsed.

    The message names the size, the limit and the option that raises it, because the
    person who reads it is usually at the client end and cannot see the server's
    configuration; `data` carries the two numbers for programs. `request_id` is the
    id the transport could still read from the message's edges (`herald.protocol.peek`),
    so the client's wait for that request ends with this error.
    """

    http_status = 413

    def __init__(self, size: int, limit: int, *, request_id: int | str | None = None) -> None:
        super().__init__(
            f"Message of {size} bytes exceeds the limit of {limit} bytes and was not processed; "
            "start the server with a larger --max-message-bytes to accept it",
            data={"size": size, "limit": limit},
            request_id=request_id,
        )
        self.size = size
        self.limit = limit


class MethodNotFound(ProtocolError):
    """The method does not exist, or not in this protocol version or capability set."""

    code = -32601
    http_status = 404


class InvalidParams(ProtocolError):
    """The params do not match the method's schema, or name something that does not exist."""

    code = -32602
    http_status = 400


class InternalError(ProtocolError):
    """Our fault. The message on the wire is generic; the cause is logged to stderr."""

    code = -32603
    http_status = 500


class ResourceNotFound(InvalidParams):
    """`resources/read` of a URI nothing serves.

    The handshake-era revisions answer -32002; 2026-07-28 (SEP-2164) moved it to -32602.
    The connection picks the code for the version in force with `code_for`.
    """

    LEGACY_CODE: ClassVar[int] = -32002

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}", data={"uri": uri})
        self.uri = uri

    def code_for(self, era: Era) -> int:
        return self.code if era.modern else self.LEGACY_CODE


class HeaderMismatch(ProtocolError):
    """HTTP headers disagree with the body (2026-07-28)."""

    code = -32020
    http_status = 400


class MissingClientCapability(ProtocolError):
    """The request needs a client capability it did not declare (2026-07-28)."""

    code = -32021
    http_status = 400

    def __init__(self, message: str, *, required: dict[str, Any]) -> None:
        super().__init__(message, data={"requiredCapabilities": required})


class UnsupportedProtocolVersion(ProtocolError):
    """The request's protocol version is not one this server speaks (2026-07-28)."""

    code = -32022
    http_status = 400

    def __init__(self, requested: object, supported: tuple[str, ...]) -> None:
        super().__init__(
            f"Unsupported protocol version {requested!r}; supported: {', '.join(supported)}",
            data={"supported": list(supported), "requested": requested},
        )


class ProgressError(HeraldError):
    """A tool reported progress that does not increase; raised in the tool's own code.

    It never reaches the wire: a non-increasing value would break the client's progress
    bar, so the mistake surfaces where it was made.
    """


class ToolError(HeraldError):
    """Raised by a tool to report a business failure the model can act on.

    Becomes a `tools/call` result with `isError: true` and this message as text,
    not a protocol error.
    """


class AuthRequired(ToolError):
    """Raised by a tool that needs the caller to sign in, or to grant more `scopes`.

    Its result is a tool error whose `_meta["mcp/www_authenticate"]` carries the OAuth
    challenge, which ChatGPT turns into a sign-in or a consent prompt; elsewhere the
    message alone reaches the model.
    """

    def __init__(self, message: str, scopes: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.scopes = frozenset(scopes)
