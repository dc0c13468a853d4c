"""What the GraphView canvas asks of an editable document: terminals of the visible boxes, and
link, unlink, delete, move, rename, TensorRT precision, extract, profile and quick add at the
pointer. Each edit is one undoable command of the document; the view redraws from the
document's change events, never from these answers. The browser side is
js/src/graph_view/edit.ts."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

import onnx_ir as ir

from nsdl_jupyter.document import (
    COMPANION_SUFFIX,
    MAX_COORDINATE,
    MOVED_KEY,
    ChangeEvent,
    ModelDocument,
    layout_coordinate,
)
from nsdl_jupyter.document.edits import SetMapping
from nsdl_jupyter.widgets._errors import WidgetError
from nsdl_jupyter.widgets._messages import (
    AddAt,
    Done,
    Empty,
    Extract,
    Link,
    Move,
    Nodes,
    Operators,
    Precision,
    Rename,
    Terminals,
    Unlink,
)
from nsdl_jupyter.widgets._protocol import Handler

if TYPE_CHECKING:
    from nsdl_jupyter.editors import PaletteIndex

_MAX_TERMINAL_NODES = 2000  # the canvas asks only for boxes on screen at a readable zoom
_MAX_PART = 100  # of a node name in an extracted file's name: file names end at 255 bytes


class ReadOnlyViewError(WidgetError):
    """An edit gesture reached a view that shows a file or a graph, not an open document."""


class ExtractPathError(WidgetError):
    """No file can be created beside the model for an extracted part."""


class CanvasEdits:
    """The edit requests of one GraphView; `doc` None makes every edit refuse (read-only)."""

    def __init__(self, doc: ModelDocument | None, selected: Callable[[], list[str]]) -> None:
        self.doc = doc
        self.selected = selected  # the view's selection: quick add feeds the new node from it
        self._profile_callbacks: list[Callable[[list[str]], object]] = []

    def handlers(self) -> dict[str, Handler]:
        return {
            "terminals": self.terminals,
            "link": self.link,
            "unlink": self.unlink,
            "delete": self.delete,
            "move": self.move,
            "rename": self.rename,
            "precision": self.precision,
            "extract": self.extract,
            "profile": self.profile,
            "add_at": self.add_at,
            "operators": self.operators,
        }

    def _doc(self) -> ModelDocument:
        if self.doc is None:
            raise ReadOnlyViewError(
                "this view is read-only: open the model as a document (nsdl_jupyter.open_model) "
                "and show it with GraphView(doc) or Designer(doc) to edit on the canvas"
            )
        return self.doc

    # ------------------------------------------------------------------ reading
    def terminals(self, payload: Nodes) -> Terminals:
        doc = self._doc()
        nodes = doc.nodes
        answer: Terminals = {
            "nodes": [],
            "tensors": [],
            "states": [],
            "optional": [],
            "variadic": [],
            "outputs": [],
        }
        for name in payload["nodes"][:_MAX_TERMINAL_NODES]:
            if name in nodes:
                _add_terminals(doc, nodes[name], answer)
        return answer

    @property
    def moved(self) -> Mapping[str, Sequence[float]]:
        """Where the user dragged boxes (node name -> top-left corner)."""
        if self.doc is None:
            return {}
        moved: Mapping[str, Sequence[float]] = self.doc.companion.get(MOVED_KEY) or {}
        return moved

    # ------------------------------------------------------------------ edits
    def link(self, payload: Link) -> Done:
        """A new link, or a link end dragged from one input to another (one undo step)."""
        doc = self._doc()
        tensor, node, index = payload["tensor"], payload["node"], payload["input"]
        if not payload["from_node"]:
            doc.connect(tensor, node, index, replace=True)
            return _done(doc)
        with doc.batch(f"relink {tensor} to {node}[{index}]"):
            doc.disconnect(payload["from_node"], payload["from_input"])
            doc.connect(tensor, node, index, replace=True)
        return _done(doc)

    def unlink(self, payload: Unlink) -> Done:
        doc = self._doc()
        pairs = set(zip(payload["nodes"], payload["inputs"], strict=True))
        ends = sorted(pairs, key=lambda e: -e[1])  # trailing inputs first: indexes stay valid
        if not ends:
            raise WidgetError("no link to remove: select a link or drag a link's end away")
        what = ", ".join(f"{node}[{index}]" for node, index in sorted(ends))
        with doc.batch(f"unlink {what}"):
            for node, index in ends:
                doc.disconnect(node, index)
        return _done(doc)

    def delete(self, payload: Nodes) -> Done:
        doc = self._doc()
        if not payload["nodes"]:
            raise WidgetError("nothing to delete: select nodes or links first")
        doc.remove_nodes(payload["nodes"])
        return _done(doc)

    def move(self, payload: Move) -> Done:
        doc = self._doc()
        names, xs, ys = payload["nodes"], payload["x"], payload["y"]
        if not (len(names) == len(xs) == len(ys)) or not names:
            raise WidgetError("move: give one x and one y per node")
        for name in names:
            doc.node(name)  # unknown names fail before anything changes
        self._place(doc, dict(zip(names, zip(xs, ys, strict=True), strict=True)), "move")
        return _done(doc)

    def _place(
        self, doc: ModelDocument, points: Mapping[str, tuple[float, float]], verb: str
    ) -> None:
        moved = {k: list(v) for k, v in self.moved.items()}
        moved.update({name: _canvas_point(x, y) for name, (x, y) in points.items()})
        description = f"{verb} {', '.join(points)}"
        doc.apply_edits(
            description,
            [SetMapping(doc.companion, MOVED_KEY, moved)],
            ChangeEvent(description),
        )

    def forget_moves(self) -> None:
        """ "Arrange": the computed layout again for every box (one undo step)."""
        if self.doc is None or not self.moved:
            return
        self.doc.apply_edits(
            "arrange",
            [SetMapping(self.doc.companion, MOVED_KEY, None)],
            ChangeEvent("arrange"),
        )

    def rename(self, payload: Rename) -> Done:
        doc = self._doc()
        doc.rename_node(payload["node"], payload["name"].strip())  # the position follows
        return _done(doc)

    def precision(self, payload: Precision) -> Done:
        doc = self._doc()
        doc.tensorrt.set_layer_precisions(payload["nodes"], payload["precision"])  # "none" too
        return _done(doc)

    def add_at(self, payload: AddAt) -> Done:
        """Quick add at the pointer, or an operator dropped from the palette: the operator
        typed (or dragged), its box where the pointer is; quick add (`link`) feeds it from the
        selected node like the Designer's quick add."""
        # imported on use: the editors and transforms packages would slow the first view
        from nsdl_jupyter.editors import add_operator, entry_for_text

        doc = self._doc()
        _canvas_point(payload["x"], payload["y"])  # refused before the node is added
        imports = doc.opset_imports
        entry, problem = entry_for_text(_palette(doc), payload["text"], imports)
        if entry is None:
            raise WidgetError(problem)
        link_from = self.selected()[:1] if payload["link"] else []
        with doc.batch(f"add {entry.op_type}"):
            name, problem = add_operator(doc, entry, link_from=link_from)
            if name is None:
                raise WidgetError(problem)
            self._place(doc, {name: (payload["x"], payload["y"])}, "place")
        return {"message": name}

    def operators(self, _payload: Empty) -> Operators:
        """Quick add's suggestions come from this list, sent once each time it opens."""
        entries = _palette(self._doc()).entries
        return {"keys": [e.key for e in entries], "categories": [e.category for e in entries]}

    # ------------------------------------------------------------------ not edits
    def extract(self, payload: Extract) -> Done:
        """Write the selection (or everything from a node on) as a model beside this one."""
        target, count = extract_nodes(
            self._doc(), payload["nodes"], downstream=payload["downstream"]
        )
        return {"message": f"extracted {count} nodes to {target.name}"}

    def on_profile(self, callback: Callable[[list[str]], object]) -> Callable[[], None]:
        self._profile_callbacks.append(callback)

        def remove() -> None:
            if callback in self._profile_callbacks:
                self._profile_callbacks.remove(callback)

        return remove

    def profile(self, payload: Nodes) -> Done:
        if not self._profile_callbacks:
            raise WidgetError(
                "nothing profiles from this view: register a profiler with "
                "view.on_profile(callback) (the Designer does)"
            )
        for callback in list(self._profile_callbacks):
            callback(list(payload["nodes"]))
        return {"message": f"profiling from {', '.join(payload['nodes'])}"}


def _palette(doc: ModelDocument) -> PaletteIndex:
    from nsdl_jupyter.editors import PaletteIndex  # on use: see add_at

    return PaletteIndex(doc.opset_imports, doc.functions.values())


def _canvas_point(x: float, y: float) -> list[float]:
    """A box's corner, refused when it is no place on the canvas (NaN, infinite, huge)."""
    point = [layout_coordinate(x), layout_coordinate(y)]
    if None in point:
        raise WidgetError(
            f"({reprlib.repr(x)}, {reprlib.repr(y)}) is no place on the canvas: coordinates "
            "are finite numbers "
            f"within ±{MAX_COORDINATE:g} layout units"
        )
    return cast("list[float]", point)


def _done(doc: ModelDocument) -> Done:
    return {"message": doc.undo_description or ""}


def _add_terminals(doc: ModelDocument, node: ir.Node, answer: Terminals) -> None:
    schema = doc.schema(node)
    formal = list(schema.inputs) if schema is not None else []
    variadic = bool(formal) and formal[-1].option == "variadic"
    fixed = len(formal) - 1 if variadic else len(formal)
    count = max(len(node.inputs), fixed + (1 if variadic else 0))
    values = [node.inputs[i] if i < len(node.inputs) else None for i in range(count)]
    options = [formal[min(i, len(formal) - 1)].option if formal else "single" for i in range(count)]
    answer["nodes"].append(node.name or "")
    answer["tensors"].append([(v.name or "") if v is not None else "" for v in values])
    answer["states"].append([_state(v) for v in values])
    answer["optional"].append([option == "optional" for option in options])
    answer["variadic"].append(variadic)
    answer["outputs"].append([v.name or "" for v in node.outputs])


def _state(value: ir.Value | None) -> str:
    if value is None:
        return "free"
    if value.is_initializer() or value.const_value is not None:
        return "initializer"
    return "linked"


def extract_nodes(
    doc: ModelDocument,
    names: Sequence[str],
    *,
    downstream: bool,
    dim_sizes: Mapping[str, int] | None = None,
) -> tuple[Path, int]:
    """Write nodes `names` (with `downstream`, and everything they feed) as a model beside the
    document's file, named after the first node; its path and the node count. `dim_sizes`:
    as in `extract_subgraph` (a profile's sizes, to measure dims no inference tells)."""
    from nsdl_jupyter.transforms import extract_subgraph  # on use: see add_at

    chosen = [doc.node(n) for n in names]
    if not chosen:
        raise WidgetError("nothing to extract: select nodes first")
    nodes = _downstream(chosen) if downstream else set(chosen)
    inputs, outputs = _boundary(doc.graph, nodes)
    folder = doc.path.parent if doc.path is not None else Path.cwd()
    stem = doc.path.stem if doc.path is not None else "model"
    # torch names hold slashes ("/layer1/Conv"): the file stays in the model's folder
    part = re.sub(r"[^A-Za-z0-9_.-]+", "_", chosen[0].name or "").strip("_.") or "node"
    with reserved_name(folder, f"{stem}.{part[:_MAX_PART]}") as target:
        # overwrite: our reservation
        extract_subgraph(doc, target, inputs, outputs, dim_sizes=dim_sizes, overwrite=True)
    return target, len(nodes)


@contextmanager
def reserved_name(folder: Path, base: str) -> Iterator[Path]:
    """The first free `<base>.onnx`, `<base>-2.onnx`, ... in `folder`, created empty and
    exclusively so that no other extraction picks it; removed again when the body raises.
    The body writes the model over the empty file (the save's atomic rename)."""
    path, reserved = _reserve(folder, base)
    try:
        yield path
    except BaseException:
        _release(path, reserved)
        raise


def _reserve(folder: Path, base: str) -> tuple[Path, os.stat_result]:
    """A name of which neither the model, nor its external data (`<name>.data`), nor its
    companion exists, so writing there replaces no one's file; created empty."""
    for number in itertools.count(1):
        path = folder / f"{base}{'' if number == 1 else f'-{number}'}.onnx"
        beside = (path.name + ".data", path.name + COMPANION_SUFFIX)
        if any(os.path.lexists(folder / name) for name in beside):
            continue
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise ExtractPathError(
                f"cannot write the extracted model in {folder} ({error.strerror}): save the "
                "model in a folder you can write to (doc.save(path)) and extract again"
            ) from None
        try:
            return path, os.fstat(fd)
        finally:
            os.close(fd)
    raise AssertionError("itertools.count never ends")


def _release(path: Path, reserved: os.stat_result) -> None:
    """Remove a reservation that is still the empty file it was (never a written model)."""
    with contextlib.suppress(OSError):
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) == (reserved.st_dev, reserved.st_ino) and not now.st_size:
            path.unlink()


def _downstream(start: Iterable[ir.Node]) -> set[ir.Node]:
    seen: set[ir.Node] = set()
    stack = list(start)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(user for value in node.outputs for user, _ in value.uses())
    return seen


def _boundary(graph: ir.Graph, nodes: set[ir.Node]) -> tuple[list[str], list[str]]:
    """Tensors a set of nodes reads from outside (cut there) and those it hands on. The
    constants and shape arithmetic they read come along, so only activations are cut."""
    from nsdl_jupyter.transforms import carried_nodes  # on use: see add_at

    carried = carried_nodes(nodes)
    inputs: dict[str, None] = {}
    outputs: dict[str, None] = {}
    for node in graph:
        if node not in carried:
            continue
        for value in node.inputs:
            if value is None or value.is_initializer() or value.const_value is not None:
                continue
            if value.producer() not in carried:
                inputs[value.name or ""] = None
        if node not in nodes:
            continue
        for value in node.outputs:
            used_outside = any(user not in nodes for user, _ in value.uses())
            if used_outside or value.is_graph_output() or not value.uses():
                outputs[value.name or ""] = None
    if not outputs:
        raise WidgetError("the chosen nodes produce nothing to extract")
    return list(inputs), list(outputs)
