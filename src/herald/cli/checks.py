"""Checks a command makes before it starts work, shared by the `herald` and `giftgenius` commands.

A mistake of the person at the keyboard never ends in a traceback: it is said in a line
or two (what was wrong, then what to do) and the command exits with status 2, the
status of a usage error. Each message names the thing it is about (the file, the port),
because it is read later, in a scrollback, without the command beside it.

Kept lean (no typer, no rich): `giftgenius serve` imports it on the path an MCP host
waits for.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

#: Addresses that mean "every interface".
ALL_INTERFACES: Final = ("0.0.0.0", "::", "")

#: The status of a usage error, as click and typer give it for a misspelt option.
USAGE_ERROR = 2


class UserError(Exception):
    """A mistake to explain, not a bug: `main` prints it and exits with `exit_code`."""

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int = USAGE_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def show(self) -> None:
        """`error: …` and, on the next line, what to do about it; on stderr, never markup."""
        print(f"error: {self.message}", file=sys.stderr)
        if self.hint:
            print(f"  {self.hint}", file=sys.stderr)


def run_command(app: Callable[[], object]) -> None:
    """Run a command line app; a `UserError` from any depth is said in a line or two, not a traceback.

    A reader that closes the pipe early (`| head`) ends the command quietly.
    """
    from herald.extras import MissingExtra

    try:
        app()
    except UserError as problem:
        problem.show()
        sys.exit(problem.exit_code)
    except MissingExtra as missing:  # an extra the command needs here is not installed
        print(f"error: {missing}", file=sys.stderr)
        sys.exit(USAGE_ERROR)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)


def bind(host: str, port: int, *, flags: tuple[str, str] = ("--host", "--port")) -> socket.socket:
    """A listening socket on `host:port`, or a line saying why there cannot be one.

    Bound as uvicorn binds one it is handed (IPv6 for an address with a colon, IPv4
    otherwise), so `localhost` is 127.0.0.1, where the other commands look by default.
    `flags` are the options the person gave the two as, which the line names.
    """
    host_flag, port_flag = flags
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(2048)
    except socket.gaierror:
        listening.close()
        raise UserError(
            f"{host_flag} {host!r} is not an address or a name this machine can resolve"
        ) from None
    except OSError as exc:
        listening.close()
        raise _bind_problem(host, port, exc, host_flag, port_flag) from None
    return listening


def _bind_problem(host: str, port: int, exc: OSError, host_flag: str, port_flag: str) -> UserError:
    if exc.errno == errno.EADDRINUSE:
        return UserError(f"port {port} is in use; pick another with {port_flag}")
    if exc.errno == errno.EACCES:
        return UserError(
            f"port {port} needs more privileges than you have; pick one above 1023 with {port_flag}"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return UserError(
            f"{host_flag} {host} is not an address of this machine",
            "Use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface).",
        )
    return UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def shown_host(host: str) -> str:
    """The host as a client would type it in a URL: IPv6 in brackets, loopback for "everywhere"."""
    if host in ALL_INTERFACES:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def writable(path: Path, option: str) -> None:
    """Whether a file can be written at `path`, said as a `UserError` when not."""
    try:
        if path.is_dir():
            raise UserError(
                f"{option} {path} is a directory", f"Name a file in it, e.g. {path / 'gifts.json'}"
            )
        folder = path.parent
        if not folder.is_dir():
            raise UserError(
                f"{option} {path}: the directory {folder} does not exist",
                f"Create it first: mkdir -p {folder}",
            )
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise UserError(f"{option} {path} is not writable by you")
    except OSError as exc:
        raise UserError(f"{option} {path} cannot be written: {exc.strerror or exc}") from None
