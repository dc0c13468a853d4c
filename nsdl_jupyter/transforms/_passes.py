"""Transforms as onnx_ir passes, and the one runner that applies a pass to a file, to a
ModelDocument (one undo step) or from the `nsdl` command.

A transform is a `TransformPass`: it changes the model it is given (or, with
`replaces_model`, returns a new one), logs to its `TransformStatus` and raises a
TransformError before it changes anything. The runner gives it a private copy, so a failed
pass leaves the source untouched: `transform_file` loads, runs, saves atomically, runs
onnx's checker and the pass's own `validate` (FP16's bisection, opset's onnxruntime
comparison); `transform_document` applies the result as one undoable command.

How to add a transform: write one module in `nsdl_jupyter/transforms/` with a
`TransformPass` subclass decorated with `@register("name", "one-line help")`, whose
`__init__` takes its options as keyword arguments and whose `apply(model)` changes the
model; import it in `transforms/__init__.py`. `nsdl transform name MODEL -o OUT
--set option=value` and `transform_file`/`transform_document` then run it; add a thin public
function (`nj.name(model, output, ...)`) when users should call it by name, and a test
module `tests/test_transforms_<name>.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

import onnx_ir as ir

from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import (
    ModelSource,
    TransformError,
    WorkingCopy,
    guard_result_path,
    working_copy,
)


class TransformPass(ir.passes.PassBase):
    """A global modification of an in-memory model that logs to `status`."""

    operation: ClassVar[str] = "transform"
    # True when `apply` builds a new model (extraction, opset conversion) instead of
    # changing the one it is given.
    replaces_model: ClassVar[bool] = False
    # onnx's checker on the result; a failure the source shares too is only logged.
    compare_with_source: ClassVar[bool] = True

    def __init__(self, *, status: TransformStatus | None = None) -> None:
        self.status = status if status is not None else TransformStatus(self.operation)

    @property
    def in_place(self) -> bool:
        return not self.replaces_model

    @property
    def changes_input(self) -> bool:
        return True

    def apply(self, model: ir.Model) -> ir.Model | bool:
        """Change `model`; return whether it changed, or the new model (`replaces_model`)."""
        raise NotImplementedError

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        outcome = self.apply(model)
        if isinstance(outcome, ir.Model):
            return ir.passes.PassResult(outcome, modified=True)
        return ir.passes.PassResult(model, modified=outcome)

    def validate(self, source: ModelSource, target: Path, saved: Path) -> Path:
        """After the file runner wrote the result to `saved`: check it further (and possibly
        write it again to `target`); returns where the result is."""
        del source, target
        return saved


class EditPass(TransformPass):
    """A pass that can say its change as primitive document edits: on a document it is one
    command over the document's own objects (undo puts the very same tensors back)."""

    def plan(self, model: ir.Model) -> tuple[str, list[e.Edit], ChangeEvent]:
        """Description, edits and event of the change; raises before anything changes."""
        raise NotImplementedError

    def apply(self, model: ir.Model) -> bool:
        _, edits, _ = self.plan(model)
        for edit in edits:
            edit.apply()
        return bool(edits)


# ------------------------------------------------------------------ registry
@dataclass(frozen=True)
class RegisteredTransform:
    """A transform the CLI and the tools can list and run by name."""

    name: str
    help: str
    factory: Callable[..., TransformPass]  # the pass class: options as keyword arguments


TRANSFORMS: dict[str, RegisteredTransform] = {}
_P = TypeVar("_P", bound=type[TransformPass])
_K = TypeVar("_K")
_V = TypeVar("_V")


def register(name: str, help: str) -> Callable[[_P], _P]:
    """Class decorator: list the pass in TRANSFORMS under `name`."""

    def add(factory: _P) -> _P:
        if name in TRANSFORMS:
            raise TransformError(f"a transform named {name!r} is registered already")
        TRANSFORMS[name] = RegisteredTransform(name, help, factory)
        return factory

    return add


def transform_named(name: str) -> RegisteredTransform:
    """The registered transform `name`, with an error that lists the others."""
    found = TRANSFORMS.get(name)
    if found is None:
        raise TransformError(f"no transform named {name!r}; there are: {sorted(TRANSFORMS)}")
    return found


# -------------------------------------------------------------------- runner
def transform_file(
    pass_: TransformPass,
    model: ModelSource,
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> TransformStatus:
    """Run `pass_` on a private copy of `model` and write the result to `output` (atomic),
    checked by onnx's checker and by the pass's own validation. An existing `output` is
    replaced only with `overwrite=True`, and never when it is one of the model's files."""
    target = guard_result_path(output, model, overwrite=overwrite)
    copy = working_copy(model)
    result = pass_(copy.model)
    status = pass_.status
    document = copy.document if result.model is copy.model else ModelDocument(result.model)
    source = model if pass_.compare_with_source else None
    saved = WorkingCopy(document, None).save(target, status, source, overwrite=overwrite)
    saved = pass_.validate(model, target, saved)
    return status.finish(saved)


def transform_document(
    pass_: TransformPass, doc: ModelDocument, description: str | None = None
) -> TransformStatus:
    """Apply `pass_` to `doc` as one undoable edit; a pass that fails changes nothing.

    An EditPass edits the document's own objects; any other pass runs on a copy that shares
    the weights, and the command exchanges the document's contents with the result (node
    objects are new afterwards; look them up by name).
    """
    status = pass_.status
    if isinstance(pass_, EditPass):
        text, edits, event = pass_.plan(doc.model)
        if edits:
            doc.apply_edits(description or text, edits, event)
            status.info(description or text)
        return status.finish(None)
    result = pass_(doc.model.clone())
    if result.modified:
        text = description or pass_.operation
        replace_document_model(doc, result.model, text)
        status.info(text)
    return status.finish(None)


def replace_document_model(doc: ModelDocument, model: ir.Model, description: str) -> None:
    """Make `model` (a changed copy of `doc.model`) the document's contents as one undoable
    edit; undo puts the former contents back."""
    event = _whole_model(doc, model, description)
    doc.apply_edits(description, [ExchangeModel(doc.model, model)], event)


def _whole_model(doc: ModelDocument, result: ir.Model, description: str) -> ChangeEvent:
    """The event of a change that may touch every node: views rebuild."""
    before = set(doc.nodes)
    after = {node.name or "" for node in result.graph}
    return ChangeEvent(
        description,
        added=frozenset(after - before),
        removed=frozenset(before - after),
        changed=frozenset(after & before),
        edges=True,
        graph_io=True,
        initializers=True,
        metadata=True,
    )


class ExchangeModel(e.Edit):
    """Exchange the contents of two models (graph, functions, model fields) in place, so the
    document keeps its model and graph objects; applying it twice is a no-op."""

    def __init__(self, model: ir.Model, other: ir.Model) -> None:
        self.model = model
        self.other = other

    def apply(self) -> None:
        _exchange_models(self.model, self.other)

    def revert(self) -> None:
        _exchange_models(self.model, self.other)


_MODEL_FIELDS = (
    "ir_version",
    "producer_name",
    "producer_version",
    "domain",
    "model_version",
    "doc_string",
)


def _exchange_models(a: ir.Model, b: ir.Model) -> None:
    _exchange_graphs(a.graph, b.graph)
    for name in _MODEL_FIELDS:
        first, second = getattr(a, name), getattr(b, name)
        setattr(a, name, second)
        setattr(b, name, first)
    _exchange_dicts(a.functions, b.functions)
    _exchange_dicts(a.metadata_props, b.metadata_props)


def _exchange_graphs(a: ir.Graph, b: ir.Graph) -> None:
    nodes_a, nodes_b = list(a), list(b)
    inputs_a, inputs_b = list(a.inputs), list(b.inputs)
    outputs_a, outputs_b = list(a.outputs), list(b.outputs)
    inits_a, inits_b = list(a.initializers.values()), list(b.initializers.values())
    for graph, nodes in ((a, nodes_a), (b, nodes_b)):
        graph.remove(nodes)
        graph.inputs.clear()
        graph.outputs.clear()
        graph.initializers.clear()
    for graph, nodes, inputs, outputs, inits in (
        (a, nodes_b, inputs_b, outputs_b, inits_b),
        (b, nodes_a, inputs_a, outputs_a, inits_a),
    ):
        graph.inputs.extend(inputs)
        for value in inits:
            graph.register_initializer(value)
        graph.extend(nodes)
        graph.outputs.extend(outputs)
    a.name, b.name = b.name, a.name
    a.doc_string, b.doc_string = b.doc_string, a.doc_string
    _exchange_dicts(a.opset_imports, b.opset_imports)
    _exchange_dicts(a.metadata_props, b.metadata_props)


def _exchange_dicts(a: dict[_K, _V], b: dict[_K, _V]) -> None:
    first, second = dict(a), dict(b)
    a.clear()
    a.update(second)
    b.clear()
    b.update(first)
