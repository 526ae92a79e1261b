"""Redirects the HTTP client follows: those that stay on the endpoint's origin and keep the method.

A server may answer `/mcp/` with `307` to `/mcp` (Starlette's slash normalisation), or
`/mcp` with `307` to `/mcp/` (an MCP app mounted under a prefix). Everything a request
carries (the message, the session id, credentials) was meant for that server, so a
redirect is followed only within its origin (the same scheme, host and port, or the https
upgrade of an http URL on the default ports), only when it keeps the method (307, 308:
httpx turns a POST into a body-less GET for 301, 302 and 303, which would drop the
message), and at most `max_redirects` times. Anything else is handed back as the answer
it is, and `unfollowed_redirect` says where it pointed. These are the rules of the official
Python SDK's transports (`mcp.shared._httpx_utils.stream_within_origin`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["stream_within_origin", "unfollowed_redirect"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@contextlib.asynccontextmanager
async def stream_within_origin(
    client: httpx.AsyncClient, method: str, url: str, **options: Any
) -> AsyncIterator[httpx.Response]:
    """`client.stream(method, url, ...)`, following the redirects this module allows."""
    request = client.build_request(method, url, **options)
    followed = 0
    while True:
        response = await client.send(request, stream=True, follow_redirects=False)
        following = _followed(response)
        if following is None or followed == client.max_redirects:
            break
        try:
            await response.aread()  # so the connection goes back to the pool
        finally:
            await response.aclose()
        request, followed = following, followed + 1
    try:
        yield response
    finally:
        await response.aclose()


def unfollowed_redirect(response: httpx.Response) -> str | None:
    """What a redirect handed back pointed at, to say so (None for any other answer)."""
    if response.next_request is None:
        return None
    location = response.next_request.url.copy_with(username=None, password=None, query=None, fragment=None)
    return f"redirected to {location}; not followed"


def _followed(response: httpx.Response) -> httpx.Request | None:
    """The request that follows `response` if it is a redirect to follow, else None."""
    following, sent = response.next_request, response.request
    if following is None or following.method != sent.method:
        return None
    if following.url.userinfo and following.url.userinfo != sent.url.userinfo:
        return None  # httpx would send a Location's own user and password as Basic auth
    return following if _within_origin(sent.url, following.url) else None


def _within_origin(url: httpx.URL, location: httpx.URL) -> bool:
    if (url.scheme, url.host, _port(url)) == (location.scheme, location.host, _port(location)):
        return True
    return (
        url.host == location.host
        and (url.scheme, _port(url)) == ("http", 80)
        and (location.scheme, _port(location)) == ("https", 443)
    )


def _port(url: httpx.URL) -> int | None:
    return url.port if url.port is not None else _DEFAULT_PORTS.get(url.scheme)
