"""Layering and public surface: dependencies point down only, `__all__` is curated."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import herald

SOURCE = Path(herald.__file__).parent.parent

#: Each package may import only from the packages listed after it (and the standard library).
ALLOWED = {
    "herald.protocol": {"herald.protocol"},
    "herald.server": {"herald.protocol", "herald.server", "herald.content", "herald.jobs", "herald.stores"},
    "herald.transports": {
        "herald.protocol",
        "herald.server",
        "herald.stores",
        "herald.jobs",
        "herald.transports",
    },
    # Stores reach into protocol for `HeraldError` alone: their errors share the one root.
    "herald.stores": {"herald.stores", "herald.jobs", "herald.protocol"},
    "herald.jobs": {"herald.jobs", "herald.stores"},
    "herald.client": {"herald.protocol", "herald.client", "herald.jobs"},
    "herald.content": set(),
}


def herald_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("herald"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("herald"))
    return found


#: Layer-neutral helpers every layer may use.
SHARED = {"herald.listeners"}


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


@pytest.mark.parametrize(
    "module_name",
    ["herald", "herald.protocol", "herald.server", "herald.client", "herald.stores", "herald.testing"],
)
def test_all_is_curated(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = module.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert not name.startswith("_")
        assert hasattr(module, name), f"{module_name}.__all__ names a missing {name}"
