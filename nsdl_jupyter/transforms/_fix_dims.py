"""Fix free dimensions to sizes: a model variant for one batch size (or sequence length).

A free dimension (`batch_size` in `float[batch_size, 16]`) becomes a number everywhere the
graph names it, so the variant is a static model: runtimes plan for that size, and the
variant's bytes (and content hash) differ from the source's. `batch=` fixes the first
dimension of every graph input that is free there, whatever its name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import onnx_ir as ir

from nsdl_jupyter.transforms._passes import TransformPass, transform_file
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import ModelSource, TransformError, check_output_path


def batch_dims(model: ir.Model) -> list[str]:
    """Names of the free first dimensions of the graph's inputs (initializers aside)."""
    names = []
    for value in model.graph.inputs:
        if value.name in model.graph.initializers or value.shape is None or not value.shape:
            continue
        first = value.shape[0]
        if isinstance(first, ir.SymbolicDim) and first.value and first.value not in names:
            names.append(first.value)
    return names


class FixDimsPass(TransformPass):
    """Free dimensions named in `sizes` (and, with `batch`, each input's free first one) become
    those sizes in every value of the graph and of its subgraphs."""

    operation = "fix dims"

    def __init__(
        self,
        sizes: Mapping[str, int] | None = None,
        *,
        batch: int | None = None,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        self.sizes = dict(sizes or {})
        self.batch = batch
        for name, size in [*self.sizes.items(), ("batch", batch)]:
            if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
                raise TransformError(f"{name}={size!r}: a dimension size is an integer >= 1")
            if size is not None and size < 1:
                raise TransformError(f"{name}={size!r}: a dimension size is an integer >= 1")

    def plan(self, model: ir.Model) -> dict[str, int]:
        """The size of each free dimension name to fix; raises before anything changes."""
        sizes = dict(self.sizes)
        if self.batch is not None:
            found = batch_dims(model)
            if not found:
                raise TransformError(
                    "batch: no graph input has a free first dimension (the model is exported "
                    "for one batch size); export it with a dynamic batch axis, or leave batch "
                    "out"
                )
            sizes.update(dict.fromkeys(found, self.batch))
        free = {d.value for v in _values(model.graph) for d in _dims(v) if d.value}
        unknown = sorted(set(sizes) - free)
        if unknown:
            raise TransformError(
                f"no free dimension named {unknown} in the model; its free dimensions are "
                f"{sorted(free) or 'none'}"
            )
        return sizes

    def apply(self, model: ir.Model) -> bool:
        sizes = self.plan(model)
        changed = 0
        for value in _values(model.graph):
            shape = value.shape
            if shape is None:
                continue
            dims = [
                sizes[d.value] if isinstance(d, ir.SymbolicDim) and d.value in sizes else d
                for d in shape
            ]
            if dims != list(shape):
                value.shape = ir.Shape(dims)
                changed += 1
        for name, size in sizes.items():
            self.status.info(f"{name} = {size}")
        self.status.count("values_fixed", changed)
        return changed > 0


def _dims(value: ir.Value) -> list[ir.SymbolicDim]:
    shape = value.shape
    return [d for d in shape if isinstance(d, ir.SymbolicDim)] if shape is not None else []


def _values(graph: ir.Graph) -> Iterator[ir.Value]:
    yield from graph.inputs
    for node in ir.traversal.RecursiveGraphIterator(graph):
        yield from node.outputs
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                yield from attr.as_graph().inputs
            elif attr.type == ir.AttributeType.GRAPHS:
                for body in attr.as_graphs():
                    yield from body.inputs
    yield from graph.outputs


def fix_dims(
    model: ModelSource,
    output: str | os.PathLike[str],
    sizes: Mapping[str, int] | None = None,
    *,
    batch: int | None = None,
    overwrite: bool = False,
) -> TransformStatus:
    """Write `model` with free dimensions fixed to `output`: `sizes` by name
    (`{"seq_len": 128}`), `batch` for each input's free first dimension."""
    target = check_output_path(output)
    return transform_file(FixDimsPass(sizes, batch=batch), model, target, overwrite=overwrite)
