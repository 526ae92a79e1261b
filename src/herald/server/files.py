"""Files a host attaches to a tool call, and fetching them safely.

ChatGPT passes a file the person attached as an object, not as its bytes: a tool lists
its file parameters in `_meta["openai/fileParams"]`, and the host fills each with
`{"download_url", "file_id", "mime_type"?, "file_name"?}`. A parameter typed `FileRef`
is such a parameter: `herald.server.specs` declares it in the tool's `_meta`, and the
input schema is the reference object's.

`download` fetches one for the server, and is careful because the link comes from a
call: https only (plain http only to loopback, where the server allows loopback), each
address the name resolves to checked before connecting and again for every redirect (no
private, loopback or link-local address unless allowed), a size cap checked on the
header and while reading, and a deadline for the whole transfer as well as for each read,
so a host that trickles bytes cannot hold a job forever. Failures are `DownloadFailed`,
with a code and a sentence a model can act on.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, Field

from herald.extras import needs

__all__ = ["DownloadFailed", "DownloadPolicy", "FileRef", "download", "file_parameters", "parameters_typed"]

#: Where ChatGPT looks for a tool's file parameters.
FILE_PARAMS_META: Final = "openai/fileParams"
#: How many redirects a download follows.
MAX_REDIRECTS: Final = 5
#: The statuses that mean the link no longer works (expired, revoked, never valid).
GONE: Final = frozenset({401, 403, 404, 410})

Progress = Callable[[int, int | None], Awaitable[None]]


class FileRef(BaseModel):
    """A file the host attached: where to download it, and what it says the file is."""

    download_url: str = Field(description="A link to download the file from (set by the host).")
    file_id: str = Field(description="The host's id of the file.")
    mime_type: str | None = Field(default=None, description="The file's media type, if known.")
    file_name: str | None = Field(default=None, description="The file's name, if known.")


def file_parameters(function: Callable[..., Any]) -> list[str]:
    """The parameters of `function` typed `FileRef` (or `FileRef | None`), in order."""
    return parameters_typed(function, FileRef)


def parameters_typed(function: Callable[..., Any], kind: type) -> list[str]:
    """The parameters of `function` typed `kind` (or an optional `kind`), in order."""
    hints = typing.get_type_hints(function)
    return [
        name
        for name, hint in hints.items()
        if name != "return" and (hint is kind or any(arg is kind for arg in typing.get_args(hint)))
    ]


class DownloadFailed(Exception):
    """A file could not be fetched; `code` says why, `message` and `hint` say it to a person."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


@dataclass(frozen=True)
class DownloadPolicy:
    """What a server lets a download do.

    `allow_loopback` is for a server that itself serves on loopback (a desktop host, a
    test): its files may come from this machine, over plain http too. `allow_private`
    admits private network addresses (a file store inside a company network); loopback
    and link-local addresses stay refused unless `allow_loopback`.
    """

    max_bytes: int = 50 * 1024 * 1024
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 300.0
    allow_loopback: bool = False
    allow_private: bool = False
    #: Passed to httpx as `verify`: True (the system's trust), or an `ssl.SSLContext`.
    verify: Any = True


async def download(ref: FileRef, policy: DownloadPolicy, progress: Progress | None = None) -> bytes:
    """The file's bytes; `progress(bytes_so_far, total_or_None)` is awaited as they arrive."""
    with needs("client", "Downloading an attached file"):
        import httpx

    timeout = httpx.Timeout(policy.read_timeout, connect=policy.connect_timeout)
    try:
        async with (
            asyncio.timeout(policy.total_timeout),
            httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=policy.verify) as http,
        ):
            url = ref.download_url
            for _ in range(MAX_REDIRECTS + 1):
                await _check_address(url, policy)
                async with http.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    return await _read(response, policy, progress)
            raise DownloadFailed(
                "download_failed",
                f"The file's link redirected more than {MAX_REDIRECTS} times.",
                "Ask the user to attach the file again.",
            )
    except TimeoutError:
        raise DownloadFailed(
            "download_timed_out",
            f"Downloading the file took longer than {policy.total_timeout:g} s.",
            "Try again later, or ask the user to attach a smaller file.",
        ) from None
    except httpx.TimeoutException:
        raise DownloadFailed(
            "download_timed_out",
            "The file's host stopped sending it.",
            "Try again later, or ask the user to attach the file again.",
        ) from None
    except httpx.HTTPError as exc:
        raise DownloadFailed(
            "download_failed",
            f"The file could not be downloaded ({type(exc).__name__}).",
            "Ask the user to attach the file again.",
        ) from None


async def _read(response: Any, policy: DownloadPolicy, progress: Progress | None) -> bytes:
    if response.status_code in GONE:
        raise DownloadFailed(
            "file_link_expired",
            f"The file's link no longer works (HTTP {response.status_code}).",
            "The link expired: ask the user to attach the file again.",
        )
    if response.status_code != 200:
        raise DownloadFailed(
            "download_failed",
            f"The file's host answered HTTP {response.status_code}.",
            "Try again in a moment; if it goes on, ask the user to attach the file again.",
        )
    declared = response.headers.get("content-length")
    total = int(declared) if declared is not None and declared.isdigit() else None
    if total is not None and total > policy.max_bytes:
        raise _too_large(policy)
    received = bytearray()
    async for chunk in response.aiter_bytes():
        received += chunk
        if len(received) > policy.max_bytes:
            raise _too_large(policy)
        if progress is not None:
            await progress(len(received), total)
    return bytes(received)


def _too_large(policy: DownloadPolicy) -> DownloadFailed:
    return DownloadFailed(
        "file_too_large",
        f"The file is larger than this server takes ({_size(policy.max_bytes)}).",
        "Ask the user for a smaller file, for example split in parts.",
    )


async def _check_address(url: str, policy: DownloadPolicy) -> None:
    """Refuse a URL the policy does not allow, by its scheme and every address its name has."""
    parts = urlsplit(url)
    host = parts.hostname
    if parts.scheme not in ("https", "http") or not host:
        raise _refused(f"The file's link is not a web address ({parts.scheme or 'none'}).")
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise DownloadFailed(
            "download_failed",
            f"The file's host {host} cannot be found.",
            "Ask the user to attach the file again.",
        ) from None
    addresses = {ipaddress.ip_address(info[4][0]) for info in infos}
    loopback = all(address.is_loopback for address in addresses)
    if parts.scheme == "http" and not (loopback and policy.allow_loopback):
        raise _refused("The file's link is plain http; only https is fetched.")
    for address in addresses:
        if address.is_loopback or address.is_link_local or address.is_unspecified:
            if not policy.allow_loopback:
                raise _refused(f"The file's link leads to {address}, an address of the server's own machine.")
        elif (address.is_private or address.is_reserved or address.is_multicast) and not policy.allow_private:
            raise _refused(f"The file's link leads to {address}, a private network address.")


def _size(count: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"


def _refused(message: str) -> DownloadFailed:
    return DownloadFailed("file_link_refused", message, "Ask the user to attach the file again in the chat.")
