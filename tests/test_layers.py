"""Imports run down the layers of DESIGN.md, and nothing crosses them unnoticed.

    base (_atomic, _display, _isolated, ...) < ops < document < graph, transforms, targets
    < profiling < figures < editors < _static_export < widgets < cli < nbconvert

Peers (graph, transforms, targets) do not import each other, and a layer imports another only
through its public names: no `_private` module or name of another package (the base modules
nsdl_jupyter/_*.py are shared helpers, open to all). Every import of the package is read from
the source (module level and inside functions alike).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nsdl_jupyter"

BASE = 0
RANKS: dict[str, float] = {
    "ops": 1,
    "examples": 1,  # models built in code: onnx only
    "document": 2,
    "graph": 3,
    "transforms": 3,
    "targets": 3,
    "profiling": 4,
    "figures": 5,
    "views": 5.5,  # deprecated alias of figures (renamed)
    "editors": 6,
    "_static_export": 7,  # the widgets drawn as HTML (widgets attach their pictures)
    "widgets": 8,
    "cli": 9,
    "nbconvert": 10,  # `nsdl html` and nbconvert's exporter
    "__init__": 11,  # the public names: anything
}
# Known crossings, each to be removed; a new one fails this test, and a removed one must leave
# this list. None are left (issue "One house").
KNOWN: set[tuple[str, str]] = set()


def _layer(parts: tuple[str, ...]) -> str:
    """The layer of a module path inside the package (`document/_saving` -> document)."""
    return parts[0].removesuffix(".py") if parts else "__init__"


def _rank(layer: str) -> float:
    return RANKS.get(layer, BASE if layer.startswith("_") else -1)


def _imports() -> set[tuple[str, str, str]]:
    """(importing layer, imported layer, file) for every import of nsdl_jupyter."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        here = _layer(path.relative_to(PACKAGE).parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
                if node.module == "nsdl_jupyter":
                    names = [f"nsdl_jupyter.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "nsdl_jupyter" and len(parts) > 1:
                    found.add((here, parts[1], str(path.relative_to(PACKAGE))))
    return found


def _private_imports() -> list[str]:
    """`file:line module name` for each private module or name imported from another layer."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        here = _layer(path.relative_to(PACKAGE).parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [(node.module, [alias.name for alias in node.names])]
            elif isinstance(node, ast.Import):
                modules = [(alias.name, []) for alias in node.names]
            else:
                continue
            for module, names in modules:
                parts = module.split(".")
                if parts[0] != "nsdl_jupyter" or len(parts) < 2 or parts[1] == here:
                    continue
                if (PACKAGE / f"{parts[1]}.py").is_file():  # a base module: shared helpers
                    continue
                private = [p for p in parts[2:] + names if p.startswith("_")]
                if private:
                    where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                    found.append(f"{where} {module} {private}")
    return sorted(found)


def test_every_layer_has_a_rank() -> None:
    unknown = {a for a, b, _ in _imports() for a in (a, b) if _rank(a) < 0}
    assert not unknown, f"give these packages a layer in tests/test_layers.py: {unknown}"


def test_imports_run_down_the_layers() -> None:
    crossings = {}
    for here, there, where in _imports():
        if here in (there, "__init__"):
            continue
        upward = _rank(there) > _rank(here)
        peers = _rank(there) == _rank(here) and _rank(here) != BASE
        if upward or peers:
            crossings.setdefault((here, there), []).append(where)
    new = {pair: files for pair, files in crossings.items() if pair not in KNOWN}
    assert not new, f"imports that cross the layers of DESIGN.md: {new}"
    gone = KNOWN - set(crossings)
    assert not gone, f"these crossings are gone: remove them from KNOWN: {gone}"


def test_base_modules_import_no_layer() -> None:
    """The shared helpers (_atomic, _isolated, _display, ...) stay below every layer."""
    above = sorted(
        (where, there)
        for here, there, where in _imports()
        if _rank(here) == BASE and _rank(there) > BASE
    )
    assert not above, above


def test_layers_import_only_public_names_of_each_other() -> None:
    """Another package's private modules and names are its own: make the name public in its
    package `__init__` (with `__all__`) or move the code where it belongs."""
    private = _private_imports()
    assert not private, "\n".join(private)
