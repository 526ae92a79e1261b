"""The protocol package and the pure parts of jobs do no I/O: none imports an I/O library."""

from __future__ import annotations

import ast
from pathlib import Path

import herald.protocol

FORBIDDEN = {
    "asyncio",
    "socket",
    "ssl",
    "selectors",
    "sqlite3",
    "redis",
    "starlette",
    "uvicorn",
    "httpx",
    "threading",
    "subprocess",
    "os",
    "io",
    "sys",
    "anyio",
    "trio",
}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_protocol_imports_no_io() -> None:
    package = Path(herald.protocol.__file__).parent
    jobs = package.parent / "jobs"
    pure_jobs = [jobs / name for name in ("machine.py", "events.py", "record.py", "store.py")]
    modules = [*sorted(package.glob("*.py")), *pure_jobs]
    assert len(modules) >= 5
    offenders = {path.name: imported_roots(path) & FORBIDDEN for path in modules}
    assert {name: found for name, found in offenders.items() if found} == {}
