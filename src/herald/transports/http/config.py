"""Settings of the Streamable HTTP transport, with the defaults a local server wants."""

from __future__ import annotations

from dataclasses import dataclass, field

from herald.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES
from herald.protocol.http import LOOPBACK_HOSTS


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """How the endpoint behaves. Every duration is in seconds."""

    path: str = "/mcp"
    #: Host names a request's Host and Origin may carry (DNS-rebinding protection).
    allowed_hosts: frozenset[str] = field(default_factory=lambda: LOOPBACK_HOSTS)
    max_body_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: A handshake-era session unused this long is closed and its memory freed.
    session_ttl: float = 30 * 60
    #: How often an idle SSE stream gets a comment line, so proxies keep it open.
    keepalive_interval: float = 15.0
    #: The `retry:` advice sent with a stream's priming event (SEP-1699), in milliseconds.
    retry_ms: int = 1000
    #: At SIGTERM, how long requests in flight may finish before the rest are cancelled.
    shutdown_timeout: int = 5
