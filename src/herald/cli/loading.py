"""A server file as `herald run` takes it: `path/to/server.py`, or `path/to/server.py:name`.

The file is imported as a module (its `if __name__ == "__main__":` block does not run),
with its folder first on `sys.path` so that it imports its neighbours as it would when
run itself. Without a name, the one `Server` at the module's top level is taken. Every
way this can go wrong (no such file, no server in it, an error while importing it) is
said in a line or two, naming the file and, for an error in it, the line.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from herald.cli.problems import UserError
from herald.server.app import Server

__all__ = ["ServerFile", "load_server", "server_file"]

#: The names a server is looked for by, first, when a file holds more than one.
USUAL_NAMES = ("server", "mcp", "app")


@dataclass(frozen=True)
class ServerFile:
    """A server file and, if given, the name of the server in it."""

    path: Path
    name: str | None

    def __str__(self) -> str:
        return f"{self.path}:{self.name}" if self.name else str(self.path)


def server_file(text: str) -> ServerFile:
    """`path.py` or `path.py:name`, checked to be a Python file that exists."""
    path_text, name = text, None
    head, colon, tail = text.rpartition(":")
    if colon and head and tail.isidentifier():
        path_text, name = head, tail
    path = Path(path_text).expanduser()
    example = "e.g. herald run server.py, or herald run server.py:server to name the server"
    if not path.exists():
        raise UserError(
            f"{path} does not exist", f"Give the path of a Python file that makes a Server, {example}"
        )
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a Python file", f"Give the server's file, {example}")
    if path.suffix != ".py":
        raise UserError(f"{path} is not a Python file (.py)", f"Give the server's file, {example}")
    return ServerFile(path.resolve(), name)


def load_server(target: ServerFile) -> Server:
    """Import the file and return its server."""
    module_name = target.path.stem
    sys.path.insert(0, str(target.path.parent))
    spec = importlib.util.spec_from_file_location(module_name, target.path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise UserError(f"{target.path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        where = f"{error.filename}:{error.lineno}" if error.lineno else str(target.path)
        raise UserError(f"{where}: {error.msg}", "Fix the file, then run it again.") from None
    except Exception as error:  # the file's own code failed: said where, not as a traceback
        raise UserError(
            f"importing {target.path} failed: {type(error).__name__}: {error}", _where_in_file(error)
        ) from None
    return _server_in(module, target)


def _where_in_file(error: BaseException) -> str | None:
    """The last line of the user's own files in the error's traceback, as a hint."""
    frames = [
        frame for frame in traceback.extract_tb(error.__traceback__) if "importlib" not in frame.filename
    ]
    if not frames:
        return None
    frame = frames[-1]
    return (
        f"at {frame.filename}:{frame.lineno}: {frame.line}"
        if frame.line
        else f"at {frame.filename}:{frame.lineno}"
    )


def _server_in(module: object, target: ServerFile) -> Server:
    found = {name: value for name, value in vars(module).items() if isinstance(value, Server)}
    if target.name is not None:
        value = getattr(module, target.name, None)
        if value is None:
            offered = ", ".join(sorted(found)) or "none"
            raise UserError(f"{target.path} has no {target.name!r}", f"Servers in it: {offered}")
        if not isinstance(value, Server):
            raise UserError(
                f"{target} is a {type(value).__name__}, not a herald Server",
                "Name the Server object: herald run FILE.py:NAME",
            )
        return value
    if len(found) == 1:
        return next(iter(found.values()))
    for usual in USUAL_NAMES:
        if usual in found:
            return found[usual]
    if not found:
        raise UserError(
            f"{target.path} makes no herald Server at its top level",
            'Make one there (server = Server("name")), or name it: herald run FILE.py:NAME',
        )
    raise UserError(
        f"{target.path} makes several servers: {', '.join(sorted(found))}",
        f"Name the one to serve, e.g. herald run {target.path}:{sorted(found)[0]}",
    )
