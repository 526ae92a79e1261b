"""Layering and public surface: dependencies point down only, no module imports itself
back through others, and `__all__` is curated."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections import deque
from collections.abc import Iterator, Mapping
from itertools import pairwise
from pathlib import Path

import pytest

import giftgenius
import herald

SOURCE = Path(herald.__file__).parent.parent
#: Where giftgenius's sources are: its own distribution, a member of the workspace.
APP_SOURCE = Path(giftgenius.__file__).parent.parent

#: Each package may import only from the packages listed after it (and the standard library).
ALLOWED = {
    "herald.protocol": {"herald.protocol"},
    "herald.server": {
        "herald.protocol",
        "herald.server",
        "herald.content",
        "herald.runtime",
        "herald.jobs",
        "herald.stores",
    },
    "herald.transports": {
        "herald.protocol",
        "herald.server",
        "herald.stores",
        "herald.jobs",
        "herald.transports",
        "herald.wire",
        "herald.auth",
    },
    # Checking access tokens: who a token stands for is the server's `Principal`.
    "herald.auth": {"herald.auth", "herald.server"},
    # The message log: its format, writer, reader and HTTP recorder. Below the transports,
    # which write it for `--message-log`; it knows JSON-RPC framing (SSE) and nothing more.
    "herald.wire": {"herald.protocol"},
    # The linter reads logs and checks them with the protocol's own rules and the job machine.
    "herald.lint": {"herald.wire", "herald.protocol", "herald.jobs"},
    # The recorders: proxies built from the transports' pipes and framing, writing `herald.wire`.
    "herald.record": {"herald.wire", "herald.transports", "herald.protocol"},
    # The `herald` command sits on top of everything it runs: the recorders and the linter,
    # a server file it serves, and the client it talks to servers with.
    "herald.cli": {
        "herald.record",
        "herald.lint",
        "herald.wire",
        "herald.transports",
        "herald.protocol",
        "herald.client",
        "herald.launch",
        "herald.server",
        "herald.stores",
    },
    # The job runtime runs job functions: jobs below it, the store's one error, and the
    # protocol error a job refused at shutdown answers with. Never the server.
    "herald.runtime": {"herald.runtime", "herald.jobs", "herald.stores", "herald.protocol"},
    # Stores implement the ports of jobs (`herald.jobs.store.JobStore`) and reach into
    # protocol for `HeraldError` alone: their errors share the one root.
    "herald.stores": {"herald.stores", "herald.jobs", "herald.protocol"},
    # Jobs define the store port they need and import no store.
    "herald.jobs": {"herald.jobs"},
    "herald.client": {"herald.protocol", "herald.client", "herald.jobs"},
    "herald.content": set(),
    # Traces and metrics: OpenTelemetry behind verbs every layer may call. It knows no
    # message type, no job and no store, so that each layer can report through it.
    "herald.telemetry": {"herald.telemetry"},
    # The official Python SDK's client, taught job events: the client's tracker, the event
    # types, and the extension's wire names that `herald.server.jobs` declares.
    "herald.sdk": {"herald.client", "herald.jobs", "herald.server"},
    # `herald.Server`: the server definition, with `run` and `http_app` handing it to a
    # transport and the stores it names; the one module above both.
    "herald.launch": {"herald.server", "herald.transports", "herald.stores"},
    # A process that runs jobs and serves no MCP: a `Server` without a transport, answering
    # health probes with the HTTP transport's routes.
    "herald.worker": {"herald.server", "herald.transports"},
    # What tests use: an in-memory client, the conformance checks, job waits, a private
    # Redis. It sits beside the transports, above the server and the stores it checks.
    "herald.testing": {
        "herald.testing",
        "herald.server",
        "herald.protocol",
        "herald.stores",
        "herald.runtime",
        "herald.jobs",
        "herald.transports",
    },
}


def herald_imports(path: Path, prefix: str = "herald") -> set[str]:
    """The modules under `prefix` that `path` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(prefix):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(prefix))
    return found


#: Layer-neutral helpers every layer may use.
SHARED = {
    "herald.listeners",
    "herald.taskgroup",
    "herald.private_files",
    "herald.extras",
    "herald.logs",
    "herald.telemetry",
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_layers_point_down(package: str) -> None:
    folder = SOURCE.joinpath(*package.split("."))
    files = sorted(folder.rglob("*.py")) if folder.is_dir() else [folder.with_suffix(".py")]
    assert files
    violations = {
        f"{path.relative_to(SOURCE)} imports {module}"
        for path in files
        for module in herald_imports(path)
        if layer_of(module) not in ALLOWED[package] | {package} | SHARED
    }
    assert violations == set()


def test_herald_never_imports_the_app_built_on_it() -> None:
    """giftgenius sits on top of herald: an import the other way would make a cycle across the
    two trees, which the per-package cycle check could not see."""
    importers = {
        f"{path.relative_to(SOURCE)} imports {module}"
        for path in sorted(SOURCE.joinpath("herald").rglob("*.py"))
        for module in herald_imports(path, prefix="giftgenius")
    }
    assert importers == set()


@pytest.mark.parametrize(
    "module_name",
    [
        "herald",
        "herald.protocol",
        "herald.server",
        "herald.client",
        "herald.runtime",
        "herald.stores",
        "herald.testing",
        "herald.wire",
        "herald.lint",
        "herald.record",
        "herald.auth",
    ],
)
def test_all_is_curated(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = module.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert not name.startswith("_")
        assert hasattr(module, name), f"{module_name}.__all__ names a missing {name}"


# -- no import cycles ------------------------------------------------------------------------
#
# The graph has one node per module (a package is its `__init__`) and an edge for every
# import statement anywhere in the file: at the top, under `if TYPE_CHECKING:` and inside
# functions alike, since each is a dependency a reader must follow. `from pkg import name`
# imports the module `pkg.name` if there is one, else `pkg` itself. Importing `a.b.c` also
# runs the `__init__` of `a` and `a.b`, so those are edges too, except where the importer
# sits inside them (its own packages are imported before it is).

#: module -> {module it imports: the line of the first such import}
ImportGraph = dict[str, dict[str, int]]


def modules_under(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a folder under `root`), by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _ancestors(module: str) -> Iterator[str]:
    parts = module.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


def imports_of(module: str, path: Path, modules: Mapping[str, Path]) -> dict[str, int]:
    """The modules of `modules` that `module` imports, with the line of the first import."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importer's package, up `level - 1` packages
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                named.append((submodule if submodule in modules else base, node.lineno))
    own_packages = set(_ancestors(module))
    found: dict[str, int] = {}
    for target, line in named:
        implied = [each for each in _ancestors(target) if each not in own_packages]
        for each in (target, *implied):
            if each in modules and each != module:
                found.setdefault(each, line)
    return found


def import_graph(root: Path, package: str) -> ImportGraph:
    modules = modules_under(root, package)
    return {module: imports_of(module, path, modules) for module, path in modules.items()}


def strongly_connected(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components, without recursion; each sorted, none empty."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> tuple[str, Iterator[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return node, iter(sorted(graph.get(node, {})))

    for root in sorted(graph):
        if root in index:
            continue
        work = [visit(root)]
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    work.append(visit(successor))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    components.append(sorted(component))
    return components


def shortest_cycle(graph: Mapping[str, Mapping[str, int]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, start repeated at the end."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(graph[node]):
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if successor in members and successor not in came_from:
                came_from[successor] = node
                queue.append(successor)
    raise AssertionError(f"{start} is in a component of {len(component)} but on no cycle")


def describe_cycles(graph: ImportGraph, modules: Mapping[str, Path], root: Path) -> list[str]:
    """One paragraph per cycle: its modules, then one shortest loop, hop by hop with the line."""
    found = []
    for component in strongly_connected(graph):
        if len(component) < 2:
            continue
        loop = shortest_cycle(graph, component)
        hops = [
            f"    {here} imports {there}  ({modules[here].relative_to(root)}:{graph[here][there]})"
            for here, there in pairwise(loop)
        ]
        found.append(f"{len(component)} modules in a cycle: {', '.join(component)}\n" + "\n".join(hops))
    return found


@pytest.mark.parametrize(
    ("package", "a_module"), [("herald", "herald.server.app"), ("giftgenius", "giftgenius.cli.jobs")]
)
def test_no_import_cycles(package: str, a_module: str) -> None:
    root = APP_SOURCE if package == "giftgenius" else SOURCE
    graph = import_graph(root, package)
    assert a_module in graph
    assert package in graph, "a package is its __init__"
    cycles = describe_cycles(graph, modules_under(root, package), root.parent)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    """TYPE_CHECKING, function-level, relative and `__init__` imports all count, and each
    cycle is reported as a loop of imports with their lines."""
    files = {
        "pkg/__init__.py": "from pkg.front import Front\nfrom pkg.side import helper\n",
        "pkg/front.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.back import Back\n",
        "pkg/back.py": "def later():\n    from . import front\n",
        "pkg/side.py": "from pkg import Front\n",  # a name of pkg, not a module: pkg's __init__
        "pkg/sub/__init__.py": "",
        "pkg/sub/leaf.py": "import pkg.sub\nfrom ..back import later\n",
        "pkg/low.py": "import pkg.sub.leaf\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.back"] == {"pkg.front": 2}
    assert graph["pkg.side"] == {"pkg": 1}
    assert graph["pkg.sub.leaf"] == {"pkg.sub": 1, "pkg.back": 2}, "its own packages are no edge"
    assert graph["pkg.low"] == {"pkg.sub.leaf": 1, "pkg.sub": 1}, "importing a.b.c runs a.b"
    cycles = describe_cycles(graph, modules_under(tmp_path, "pkg"), tmp_path)
    assert sorted(cycles) == [
        "2 modules in a cycle: pkg, pkg.side\n"
        "    pkg imports pkg.side  (pkg/__init__.py:2)\n"
        "    pkg.side imports pkg  (pkg/side.py:1)",
        "2 modules in a cycle: pkg.back, pkg.front\n"
        "    pkg.back imports pkg.front  (pkg/back.py:2)\n"
        "    pkg.front imports pkg.back  (pkg/front.py:3)",
    ]
    del graph["pkg.back"]["pkg.front"], graph["pkg.side"]["pkg"]
    assert describe_cycles(graph, modules_under(tmp_path, "pkg"), tmp_path) == []


def test_a_server_loads_only_what_it_uses() -> None:
    """Token checking (PyJWT, cryptography, httpx) and uvicorn are imported by the code that
    runs them, not by importing the transports: an app mounted in another ASGI server, or one
    without authentication, never pays for them (about 20 MiB of memory)."""
    heavy = ("jwt", "httpx", "cryptography", "uvicorn", "aiohttp")
    code = (
        "import sys, herald, herald.transports.http, herald.transports.stdio, giftgenius.app\n"
        f"print(' '.join(name for name in {heavy!r} if name in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == []
