"""Imports run down the layers of DESIGN.md, and nothing crosses them unnoticed.

    base (_atomic, _display, _isolated, ...) < ops < document < graph, transforms, targets
    < profiling < sweeps < figures < editors < _static_export < widgets < cli < nbconvert

Peers (graph, transforms, targets) do not import each other, and a layer imports another only
through its public names: no `_private` module or name of another package (the base modules
nsdl_jupyter/_*.py are shared helpers, open to all). Every import of the package is read from
the source (module level and inside functions alike).
"""

from __future__ import annotations

import ast
import sys
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
    "sweeps": 4.5,  # grids of profiles on Dask: uses profiling and transforms; figures draw it
    "figures": 5,
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


# The rooms inside a layer. Widgets: the Designer holds a GraphView and an ActivityPanel; the
# profiling widgets pick targets; the graph and profile rooms do not know each other.
WIDGET_ROOMS: dict[str, int] = {"targets": 1, "profile": 2, "graph": 2, "designer": 3}
# What a runner script may import: it runs as a plain file on a target that has only Python, a
# runtime and numpy (DESIGN.md, "Profiling"), so never nsdl_jupyter nor a kernel-side library.
RUNTIME_MODULES = {
    "numpy",
    "onnxruntime",
    "tensorrt",
    "tensorrt_rtx",
    "cupti",
    "pynvml",
    "cuda",  # cuda-python, for TensorRT's device buffers
    "nvtx",  # NVTX ranges around profiled passes, where installed
    "tensorrt_bindings",  # the TensorRT type stubs, under TYPE_CHECKING only
}


def _room_imports(layer: str) -> set[tuple[str, str, str]]:
    """(room, imported room, file) for the imports between the sub-packages of `layer`; modules
    directly in the layer's folder are its room "" (shared by its rooms)."""
    found = set()
    for path in (PACKAGE / layer).rglob("*.py"):
        rel = path.relative_to(PACKAGE / layer).parts
        here = rel[0] if len(rel) > 1 else ""
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["nsdl_jupyter", layer] and len(parts) > 2:
                    there = "" if parts[2].startswith("_") else parts[2]
                    found.add((here, there, "/".join(rel)))
    return found


def test_widget_rooms_import_down() -> None:
    wrong = sorted(
        (where, there)
        for here, there, where in _room_imports("widgets")
        if here and there and here != there and WIDGET_ROOMS[there] >= WIDGET_ROOMS[here]
    )
    assert not wrong, f"widget rooms import up or sideways: {wrong}"
    unknown = {here for here, _, _ in _room_imports("widgets") if here} - set(WIDGET_ROOMS)
    assert not unknown, f"give these widget rooms a rank: {unknown}"


def test_runner_scripts_import_only_the_standard_library_numpy_and_runtimes() -> None:
    """Every module-level and in-function import of profiling/runners/*.py."""
    runners = sorted((PACKAGE / "profiling" / "runners").glob("_*.py"))
    assert len(runners) >= 4, runners
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    bad = []
    for path in runners:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""] if node.level == 0 else ["(relative)"]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in stdlib and top not in RUNTIME_MODULES:
                    bad.append(f"{path.name}:{node.lineno} {module}")
    assert not bad, f"runner scripts import beyond the stdlib, numpy and runtimes: {bad}"
