"""Settings of the Streamable HTTP transport, with the defaults a local server wants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from herald.auth.config import AuthConfig
from herald.protocol.codec import DEFAULT_MAX_MESSAGE_BYTES
from herald.protocol.hosts import LOOPBACK_HOSTS, HostAllowList

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """How the endpoint behaves. Every duration is in seconds."""

    path: str = "/mcp"
    #: Host names a request's Host and Origin may carry (DNS-rebinding protection).
    allowed_hosts: frozenset[str] = field(default_factory=lambda: LOOPBACK_HOSTS)
    #: Exact origins (`https://inspector.example`) whose pages may call the endpoint: they
    #: pass the Origin check and get CORS headers, as pages on an allowed host already do.
    cors_origins: frozenset[str] = frozenset()
    max_body_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: A handshake-era session unused this long is closed and its memory freed.
    session_ttl: float = 30 * 60
    #: How often an idle SSE stream gets a comment line, so proxies keep it open.
    keepalive_interval: float = 15.0
    #: The `retry:` advice sent with a stream's priming event (SEP-1699), in milliseconds.
    retry_ms: int = 1000
    #: At SIGTERM, how long requests in flight may finish before the rest are cancelled.
    shutdown_timeout: int = 5
    #: A connection must send a whole request head within this many seconds (from connecting,
    #: or from the head's first bytes on a kept-alive one), then its body within `body_timeout`.
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    #: A connection whose client takes none of what the server writes for this many
    #: seconds, with more waiting to be written, is dropped: it has stopped reading.
    write_timeout: float = 30.0
    #: An idle keep-alive connection is closed after this many seconds.
    keepalive_timeout: float = 5.0
    #: Connections served at once; one more is answered 503 with Retry-After and closed.
    max_connections: int = 1000
    #: Event streams one session may hold open at once (its GET stream and POST answers).
    max_streams_per_session: int = 32
    #: Ask every request for an OAuth access token (see `herald.auth`); None: no authentication.
    auth: AuthConfig | None = None
    #: Serve the metrics in Prometheus's text format here (`herald.transports.http.metrics`).
    metrics_path: str | None = None

    def __post_init__(self) -> None:
        for origin in sorted(self.cors_origins):
            _check_cors_origin(origin)
        HostAllowList.parse(self.allowed_hosts)  # an entry that could never match is refused now
        for name in ("header_timeout", "body_timeout", "write_timeout", "keepalive_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {getattr(self, name)!r}")
        if self.max_connections < 1 or self.max_streams_per_session < 1:
            raise ValueError("max_connections and max_streams_per_session must be at least 1")


def _check_cors_origin(origin: str) -> None:
    """Refuse, when the server is configured, an origin that no browser would ever send.

    Origins are compared as exact strings, so a trailing slash or an upper-case letter
    would silently never match; the error names the spelling that would. `*` is refused:
    it would let every page on the web open and drive sessions on this server.
    """
    if origin == "null":
        return  # sandboxed frames and files send it; listed explicitly, it is allowed
    if origin == "*":
        raise ValueError(
            "cors_origins cannot be '*': that would let every web page drive this server; "
            "list each origin, e.g. http://localhost:6274"
        )
    as_sent = _serialized(origin)
    if as_sent is None:
        raise ValueError(
            f"cors_origins: {origin!r} is not an origin; write scheme://host[:port], "
            "e.g. http://localhost:6274"
        )
    if as_sent != origin:
        raise ValueError(f"cors_origins: browsers send {origin!r} as {as_sent!r}; write that")


def _serialized(origin: str) -> str | None:
    """`origin` the way a browser writes it in an Origin header, or None if it has no such form."""
    parts = urlsplit(origin)
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown_port = "" if port in (None, _DEFAULT_PORTS[parts.scheme]) else f":{port}"
    return f"{parts.scheme}://{host}{shown_port}"
