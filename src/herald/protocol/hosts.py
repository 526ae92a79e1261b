"""Which hosts may reach the server: the Host and Origin checks against DNS rebinding.

A page on the web can make a browser send requests to `127.0.0.1`; if its own name
resolves there (DNS rebinding), the browser sends that name as the Host, and a page's
Origin is always its own. So a request is served only when its Host, and its Origin if it
has one, name a host on the allow list. The parsing is strict, because any gap between
what this check reads and what a proxy or the browser meant is a way around it:

- names are compared without regard to case (`LOCALHOST` is `localhost`);
- a Host must be `name[:port]` or `[ipv6][:port]`: userinfo (`127.0.0.1:80@evil.test`),
  junk after an IPv6 literal, an empty or out-of-range port are refused;
- `Origin: null` (a sandboxed frame, a file) names no host and is refused unless the
  operator lists it (`null` in the CORS origins);
- allow-list entries are `name`, `name:port` or `*.domain` (any subdomain of `domain`), and
  an entry that could never match a Host is refused when the server is configured.

Pure computation: no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from herald.protocol.errors import ProtocolError

LOOPBACK_HOSTS: Final[frozenset[str]] = frozenset({"127.0.0.1", "localhost", "[::1]"})

_NAME: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?"
_IPV6: Final = r"\[[0-9A-Fa-f:.]+(?:%[0-9A-Za-z._~-]+)?\]"
_HOST: Final = re.compile(rf"(?P<host>{_IPV6}|{_NAME})(?::(?P<port>[0-9]{{1,5}}))?")
_WILDCARD: Final = re.compile(rf"\*\.(?P<domain>{_NAME})")


class HostRefused(ProtocolError):
    """Host or Origin names a host this server does not answer (403), or is malformed (400)."""

    code = -32600

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


@functools.lru_cache(maxsize=1024)  # a server hears the same few Host values over and over
def split_host(value: str) -> tuple[str, int | None] | None:
    """(lower-case host, port) of a Host header or an origin's authority; None if it is not one."""
    found = _HOST.fullmatch(value)
    if found is None:
        return None
    port = int(found["port"]) if found["port"] is not None else None
    if port is not None and not 0 < port < 65536:
        return None
    return found["host"].lower().rstrip("."), port


@dataclass(frozen=True, slots=True)
class HostAllowList:
    """Parsed allow-list entries: exact names, names with a port, and `*.domain` suffixes."""

    names: frozenset[str]
    with_port: frozenset[tuple[str, int]]
    suffixes: tuple[str, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> HostAllowList:
        """The list from `entries`; `ValueError` naming an entry that could never match a Host."""
        names: set[str] = set()
        with_port: set[tuple[str, int]] = set()
        suffixes: list[str] = []
        for entry in entries:
            text = entry.strip()
            if text.count(":") > 1 and not text.startswith("["):
                text = f"[{text}]"  # a bare IPv6 address
            wildcard = _WILDCARD.fullmatch(text)
            if wildcard is not None:
                suffixes.append("." + wildcard["domain"].lower().rstrip("."))
                continue
            parsed = split_host(text)
            if parsed is None:
                raise ValueError(
                    f"allowed host {entry!r} can never match a Host header: write a name (example.com), "
                    "a name and port (example.com:8443), or *.example.com"
                )
            host, port = parsed
            if port is None:
                names.add(host)
            else:
                with_port.add((host, port))
        return cls(frozenset(names), frozenset(with_port), tuple(suffixes))

    def allows(self, host: str, port: int | None) -> bool:
        return (
            host in self.names
            or (port is not None and (host, port) in self.with_port)
            or any(host.endswith(suffix) for suffix in self.suffixes)
        )

    def cors_pattern(self) -> str:
        """The origins whose pages may read this server's answers: those on an allowed host.

        Browser-based hosts (the Inspector, web MCP Apps hosts) call the endpoint from a
        page of their own, so the answers need CORS headers; the set is the one the Host
        and Origin checks admit, so the two rules cannot drift apart.
        """
        alternatives = [rf"{re.escape(name)}(:\d+)?" for name in sorted(self.names)]
        alternatives += [rf"{re.escape(host)}:{port}" for host, port in sorted(self.with_port)]
        alternatives += [rf"[A-Za-z0-9.-]+{re.escape(suffix)}(:\d+)?" for suffix in self.suffixes]
        return rf"https?://({'|'.join(alternatives) or '(?!)'})"


def check_host_and_origin(
    headers: Mapping[str, str], allowed: HostAllowList, *, target_authority: str | None = None
) -> None:
    """DNS-rebinding protection: the Host (or an absolute-form target's authority) and the
    Origin, when sent, must name an allowed host. Raises `HostRefused`."""
    host = headers.get("host", "")
    parsed = split_host(host)
    if parsed is None:
        raise HostRefused(400, f"Bad Request: Host {host!r} is not a host name with an optional port")
    if not allowed.allows(*parsed):
        raise HostRefused(403, f"Forbidden: Host {host!r} is not allowed to reach this server")
    if target_authority is not None:
        target = split_host(target_authority)
        if target is None or not allowed.allows(*target):
            raise HostRefused(
                403, f"Forbidden: the request names {target_authority!r}, which this server is not"
            )
    origin = headers.get("origin")
    if origin is None:
        return
    if origin == "null":
        raise HostRefused(
            403, "Forbidden: Origin null (a sandboxed frame or a file) may not reach this server"
        )
    parts = urlsplit(origin)
    authority = split_host(parts.netloc) if parts.scheme in ("http", "https") and not parts.path else None
    if authority is None or not allowed.allows(*authority):
        raise HostRefused(403, f"Forbidden: Origin {origin!r} is not allowed to reach this server")
