"""Sanitize a graph: constant folding, no-op removal, dead node removal, shape inference.

One pass: Constant nodes become initializers; onnx shape inference runs so that `Shape` and
`Size` of statically shaped tensors are known; every node whose inputs are all constant is
sized from its inputs (`_estimate`), and unless that is over the fold size threshold,
evaluated in a child process (onnxruntime, else onnx's reference evaluator; `_evaluate`) and
replaced by initializers; a crash or an out-of-memory there keeps the node, never kills the
kernel. Reshapes to computed shapes get constant ones; nodes that compute nothing
(Identity, a Cast to the same type, `x * 1`, ...; see `_simplify`) are bypassed; nodes and
initializers nothing uses are removed. Passes repeat until nothing changes, or a pass's
changes cannot give another anything to do (`passes` caps them); shape inference runs once
more at the end so the result carries every shape it can.
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedFunctionsPass

from nsdl_jupyter._isolated import DEFAULT_MEMORY_LIMIT, ChildRaisedError, IsolatedRunError
from nsdl_jupyter._tensor_bytes import tensor_bytes
from nsdl_jupyter._walk import graphs_in, has_subgraphs, nodes_in, subgraphs
from nsdl_jupyter.transforms._estimate import bytes_per_element, output_bytes
from nsdl_jupyter.transforms._evaluate import BatchResult, Evaluator
from nsdl_jupyter.transforms._passes import TransformPass, register, transform_file
from nsdl_jupyter.transforms._shapes import infer_shapes, shapes_settled
from nsdl_jupyter.transforms._simplify import (
    NONDETERMINISTIC,
    Simplifier,
    fuse_batchnorm,
    new_initializer,
)
from nsdl_jupyter.transforms._small_ops import evaluate_small
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import ModelSource, TransformError, check_output_path

_LOGGED_NAMES = 12  # names listed per log line before "and N more"


def sanitize(
    model: ModelSource,
    output: str | os.PathLike[str],
    fold_size_threshold: int | None = None,
    passes: int | None = None,
    *,
    fold_constants: bool = True,
    simplify: bool = True,
    remove_dead_nodes: bool = True,
    infer_shapes: bool = True,
    fuse_batchnorm: bool = False,
    overwrite: bool = False,
) -> TransformStatus:
    """Fold constants, remove dead nodes and infer shapes; write the result to `output`.

    `fold_size_threshold`: largest folded tensor in bytes (None: no limit); a node whose
    output would be larger stays, and is never computed (its size comes from its inputs).
    Folding runs in a child process with a memory cap, so a runtime crash keeps the node.
    `passes`: how many fold/remove passes (None: repeat until nothing changes).
    `fuse_batchnorm`: fold BatchNormalization into the Conv before it (not bit-exact, hence
    off by default). Returns a TransformStatus whose log says what was
    folded, what was removed and which nodes could not be evaluated.
    """
    sanitizer = SanitizePass(
        fold_size_threshold,
        passes,
        fold_constants=fold_constants,
        simplify=simplify,
        remove_dead_nodes=remove_dead_nodes,
        infer_shapes=infer_shapes,
        fuse_batchnorm=fuse_batchnorm,
    )
    return transform_file(sanitizer, model, check_output_path(output), overwrite=overwrite)


@register("sanitize", "fold constants, remove no-op and dead nodes, infer shapes")
class SanitizePass(TransformPass):
    """Constant folding, no-op and dead node removal, shape inference (see `sanitize`)."""

    operation = "sanitize"

    def __init__(
        self,
        fold_size_threshold: int | None = None,
        passes: int | None = None,
        *,
        fold_constants: bool = True,
        simplify: bool = True,
        remove_dead_nodes: bool = True,
        infer_shapes: bool = True,
        fuse_batchnorm: bool = False,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        if fold_size_threshold is not None and (
            isinstance(fold_size_threshold, bool)
            or not isinstance(fold_size_threshold, int)
            or fold_size_threshold < 0
        ):
            raise TransformError(
                f"fold_size_threshold must be a number of bytes >= 0 or None, not "
                f"{fold_size_threshold!r}"
            )
        if passes is not None and (
            isinstance(passes, bool) or not isinstance(passes, int) or passes < 1
        ):
            raise TransformError(
                f"passes must be an int >= 1 or None (until stable), not {passes!r}"
            )
        self.options = _Options(
            fold_size_threshold,
            passes,
            fold_constants,
            simplify,
            remove_dead_nodes,
            infer_shapes,
            fuse_batchnorm,
        )

    def apply(self, model: ir.Model) -> bool:
        _sanitize(model, self.options, self.status)
        return True


@dataclass(frozen=True)
class _Options:
    fold_size_threshold: int | None
    passes: int | None
    fold_constants: bool
    simplify: bool
    remove_dead_nodes: bool
    infer_shapes: bool
    fuse_batchnorm: bool


def _sanitize(model: ir.Model, options: _Options, status: TransformStatus) -> None:
    """The passes of `sanitize` on `model`, in place."""
    fold_size_threshold, passes = options.fold_size_threshold, options.passes
    fold_constants, simplify = options.fold_constants, options.simplify
    remove_dead_nodes, infer_shapes = options.remove_dead_nodes, options.infer_shapes
    fuse_batchnorm = options.fuse_batchnorm
    before = _node_count(model)
    folder = _Sanitizer(model, fold_size_threshold, status, memory_limit=_child_memory(model))
    if fold_constants and _likely_folds(model.graph):
        folder.start_evaluator()  # its imports overlap with the first shape inference
    untyped = [] if infer_shapes else _untyped_values(model)
    done = 0
    changed = True
    at_fixpoint = False  # the graph is as the last simplify left it: no rule applies
    while changed and (passes is None or done < passes):
        done += 1
        lifted = folder.lift_constants(done) if fold_constants else False
        # Every pass starts from fresh shapes; edits never invalidate the shapes of the
        # tensors that remain, so the rules below need no inference of their own.
        learned = _infer(model)
        forwarded = folder.forwarded
        folded = folder.fold(done) if fold_constants else 0
        # `opened`: a change that may give an earlier step of the next pass more to do
        opened = folded > folder.forwarded - forwarded
        if simplify and (not at_fixpoint or lifted or folded):
            opened |= folder.simplify(done)
        elif simplify and learned:  # the graph is as the rules left it, with new shapes
            opened |= folder.simplify(done, near=learned)
        at_fixpoint = simplify
        if fuse_batchnorm and folder.fuse_batchnorm(done):
            opened = True
            at_fixpoint = False
        if remove_dead_nodes and folder.remove_dead(done):
            opened = True
            at_fixpoint = False
        changed = lifted or folder.forwarded > forwarded or opened
        if changed and not opened and shapes_settled(model):
            # Lifting and forwarding come before the steps they feed, in this pass; only
            # inference could learn more (Identity stops onnx's data propagation), and with
            # every shape known it cannot: a next pass would change nothing.
            changed = False
    status.count("passes", done)
    if infer_shapes:
        if changed:  # stopped by `passes`: the last pass's edits are not inferred yet
            _infer(model)
        status.info("shape inference: done")
    else:
        for value in untyped:
            value.type, value.shape = None, None
    after = _node_count(model)
    status.info(f"nodes: {before} -> {after}")


def _likely_folds(graph: ir.Graph) -> bool:
    """Some node reads only constants (the first pass will evaluate something)."""
    constant = {v for v in graph.initializers.values() if not v.is_graph_input()}
    for node in graph:
        inputs = [v for v in node.inputs if v is not None]
        if node.op_type == "Constant" and not node.inputs:
            constant.update(node.outputs)
        elif inputs and all(v in constant for v in inputs) and node.op_type not in NONDETERMINISTIC:
            return True
    return False


def _child_memory(model: ir.Model) -> int:
    """Address space for the folding child: room for a copy or two of the largest weight
    a folded node may read, on top of the runtime's own."""
    largest = max(
        (tensor_bytes(v.const_value) for v in model.graph.initializers.values() if v.const_value),
        default=0,
    )
    return DEFAULT_MEMORY_LIMIT + 4 * largest


def _untyped_values(model: ir.Model) -> list[ir.Value]:
    """Intermediate tensors without a declared type (kept so when shapes are not wanted)."""
    return [
        value
        for node in nodes_in(model.graph)
        for value in node.outputs
        if value.type is None and not value.is_graph_output()
    ]


def _topological(graph: ir.Graph) -> bool:
    """Every node comes after the producers in this graph of its inputs."""
    seen: set[ir.Value] = set()
    for node in graph:
        for value in node.inputs:
            producer = value.producer() if value is not None else None
            if producer is not None and producer.graph is graph and value not in seen:
                return False
        seen.update(node.outputs)
    return True


def _node_count(model: ir.Model) -> int:
    return sum(len(graph) for graph in graphs_in(model.graph))


def _infer(model: ir.Model) -> list[ir.Value]:
    """Fresh shapes; the values that got a new type or shape."""
    return infer_shapes(model) or []


def _names(nodes: Iterable[str]) -> str:
    listed = sorted(nodes)
    shown = ", ".join(listed[:_LOGGED_NAMES])
    more = len(listed) - _LOGGED_NAMES
    return f"{shown} and {more} more" if more > 0 else shown


def _by_op(nodes: Iterable[ir.Node]) -> str:
    counts = Counter(node.op_type for node in nodes)
    return ", ".join(f"{op} {count}" for op, count in counts.most_common())


class _Constants:
    """Constant tensors visible in a graph: its initializers and those of enclosing graphs
    (read lazily: a weight's bytes are only touched when a folded node reads them), plus
    values computed during this pass (`extra`)."""

    def __init__(self, values: dict[ir.Value, None] | None = None) -> None:
        self.values: dict[ir.Value, None] = dict(values or {})
        self.extra: dict[ir.Value, np.ndarray] = {}

    def child(self, graph: ir.Graph) -> _Constants:
        scope = _Constants(self.values)
        scope.extra = dict(self.extra)
        for value in graph.initializers.values():
            if not value.is_graph_input() and value.const_value is not None:
                scope.values[value] = None
        return scope

    def __contains__(self, value: object) -> bool:
        return value in self.extra or value in self.values

    def __getitem__(self, value: ir.Value) -> np.ndarray:
        if value in self.extra:
            return self.extra[value]
        assert value.const_value is not None
        return value.const_value.numpy()

    def shape(self, value: ir.Value) -> tuple[int, ...]:
        """The shape, without reading a stored tensor's bytes."""
        if value in self.extra:
            return tuple(self.extra[value].shape)
        assert value.const_value is not None
        return tuple(value.const_value.shape.numpy())

    def itemsize(self, value: ir.Value) -> int:
        if value in self.extra:
            return int(self.extra[value].itemsize)
        assert value.const_value is not None
        return bytes_per_element(value.const_value.dtype)

    def update(self, values: dict[ir.Value, np.ndarray]) -> None:
        self.extra.update(values)

    def __setitem__(self, value: ir.Value, array: np.ndarray) -> None:
        self.extra[value] = array


@dataclass
class _Sanitizer:
    model: ir.Model
    threshold: int | None
    status: TransformStatus
    skipped: set[ir.Node] = field(default_factory=set)
    number: int = 0
    memory_limit: int | None = None
    evaluator: Evaluator | None = None
    forwarded: int = 0  # Identity nodes of constants forwarded so far

    def start_evaluator(self) -> Evaluator:
        """The child process that evaluates nodes, started now if it is not running."""
        if self.evaluator is None:
            self.evaluator = Evaluator(
                self.model, max_bytes=self.threshold, memory_limit=self.memory_limit
            )
        self.evaluator.start()
        return self.evaluator

    def _report(self, counter: str, count: int, text: str) -> None:
        """Count one step's work under `counter` and log `text` for this pass (nothing
        when the step did nothing)."""
        if count:
            self.status.count(counter, count)
            self.status.info(f"pass {self.number}: {text}")

    # ---------------------------------------------------------------- folding
    def lift_constants(self, number: int) -> bool:
        self.number = number
        graphs = graphs_in(self.model.graph)
        if not all(_topological(graph) for graph in graphs):
            self.model.graph.sort()  # keeps the order of a sorted graph, so only when needed
        lifted = sum(self._lift_constants(g) for g in graphs)
        self._report("constants_lifted", lifted, f"{lifted} Constant node(s) became initializers")
        return bool(lifted)

    def fold(self, number: int) -> int:
        """Fold in every graph; how many nodes were folded, forwarded or pinned."""
        self.number = number
        return self._fold_tree(self.model.graph, _Constants())

    def _fold_tree(self, graph: ir.Graph, outer: _Constants) -> int:
        """Fold in `graph`, then in its subgraphs (which see this graph's constants)."""
        folded = self._fold(graph, outer.child(graph))
        scope = outer.child(graph)  # again: folding registered new initializers
        scope.extra.clear()
        for node in list(graph):
            for subgraph in subgraphs(node):
                folded += self._fold_tree(subgraph, scope)
        return folded

    def _lift_constants(self, graph: ir.Graph) -> int:
        lifted = 0
        for node in list(graph):
            if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
                continue
            tensor = constant_tensor(node)
            if tensor is None:
                continue
            self._replace_with_initializer(graph, node.outputs[0], tensor)
            graph.remove(node, safe=True)
            lifted += 1
        return lifted

    def _fold(self, graph: ir.Graph, constants: _Constants) -> int:
        forwarded = self._forward_identities(graph, constants)
        shapes: dict[ir.Node, dict[ir.Value, np.ndarray]] = {}
        batch: list[ir.Node] = []
        pending: set[ir.Value] = set()
        for node in graph:
            if not self._foldable(node):
                continue
            static = _static_shape_result(node) or _shape_part_result(node, constants)
            if static is not None:
                shapes[node] = static
                constants.update(static)
                continue
            inputs = [v for v in node.inputs if v is not None]
            if inputs and all(v in constants or v in pending for v in inputs):
                batch.append(node)
                pending.update(node.outputs)
        pinned = forwarded + self._pin_reshapes(graph, constants)
        if not shapes and not batch:
            return pinned
        values = constants.extra.copy()
        values.update(self._evaluate(batch, constants))
        return pinned + self._apply(graph, [*shapes, *batch], values)

    def _forward_identities(self, graph: ir.Graph, constants: _Constants) -> int:
        """Identity of a stored constant: its users read the constant itself. Nothing is
        computed, and no weight goes to the folding child and back (TorchScript exports put
        an Identity before every shared weight). A graph output keeps its Identity here."""
        forwarded = []
        for node in list(graph):
            source = node.inputs[0] if node.op_type == "Identity" and node.inputs else None
            if (
                source is None
                or node.domain not in ("", "ai.onnx")
                or source not in constants.values
                or node.outputs[0].is_graph_output()
            ):
                continue
            node.outputs[0].replace_all_uses_with(source)
            graph.remove(node, safe=True)
            forwarded.append(node.name or "Identity")
        self.forwarded += len(forwarded)
        self._report(
            "nodes_folded",
            len(forwarded),
            f"{len(forwarded)} Identity node(s) of constants removed, their users read the "
            f"constant: {_names(forwarded)}",
        )
        return len(forwarded)

    def _pin_reshapes(self, graph: ir.Graph, constants: _Constants) -> int:
        """Reshape to a computed shape gets a constant one when its result has at most one
        free dimension besides those it keeps from its input: 0 (copy) for a dimension the
        input has at the same place, -1 for the free one. The shape arithmetic feeding it
        (Shape, Gather, Unsqueeze, Concat) then dies: HF's head split `x.view(*x.size()[:-1],
        heads, size)` on [batch, sequence, hidden] becomes Reshape(x, [0, 0, 12, 64])."""
        pinned = []
        for node in graph:
            if node.op_type != "Reshape" or node.domain not in ("", "ai.onnx"):
                continue
            if len(node.inputs) < 2 or node.inputs[1] is None or node.inputs[1] in constants:
                continue
            dims = _known_dims(node.outputs[0].shape)
            if dims is None or any(dim == 0 for dim in dims):
                continue
            copied = _copied_dims(node)
            free = [i for i, dim in enumerate(dims) if dim is None and i not in copied]
            allowzero = node.attributes.get("allowzero")
            literal_zeros = allowzero is not None and allowzero.as_int()
            # With allowzero=1 (dynamo exports) a copied dim that is 0 at run time was a
            # literal 0, which a copy reproduces; a -1 beside it could not be resolved.
            if len(free) > (0 if literal_zeros else 1):
                continue
            if literal_zeros:
                node.attributes["allowzero"] = ir.AttrInt64("allowzero", 0)
            target = np.array(
                [0 if i in copied else -1 if dim is None else dim for i, dim in enumerate(dims)],
                dtype=np.int64,
            )
            constant = new_initializer(graph, f"{node.inputs[1].name}_pinned", target)
            node.replace_input_with(1, constant)
            constants[constant] = target
            pinned.append(node.name or "Reshape")
        self._report(
            "reshapes_pinned",
            len(pinned),
            f"{len(pinned)} Reshape(s) got a constant shape (0 where it keeps the input's, -1 "
            f"for a free one): {_names(pinned)}",
        )
        return len(pinned)

    def _foldable(self, node: ir.Node) -> bool:
        if node in self.skipped or node.op_type in NONDETERMINISTIC:
            return False
        if has_subgraphs(node):
            return False
        return all(output.name for output in node.outputs)

    def _evaluate(
        self, batch: Sequence[ir.Node], constants: _Constants
    ) -> dict[ir.Value, np.ndarray]:
        """Values of the batch's outputs, in one call to the child, which sizes each node
        before it runs it; nodes over the threshold, or that fail, are skipped. A child that
        dies on the batch: round by round, each node alone, so only the culprit is lost."""
        if not batch:
            return {}
        feeds = {v.name or "": constants[v] for v in _inputs_from_outside(batch)}
        small = evaluate_small(batch, feeds, self.threshold)
        if small is not None:
            return {v: small[v.name or ""] for node in batch for v in node.outputs}
        try:
            result = self.start_evaluator().evaluate_chain(batch, feeds)
        except (IsolatedRunError, ChildRaisedError) as error:
            return self._evaluate_rounds(
                batch, constants, alone=isinstance(error, IsolatedRunError)
            )
        values, too_big = self._collect(batch, result)
        self._report_too_big(too_big)
        return values

    def _evaluate_rounds(
        self, batch: Sequence[ir.Node], constants: _Constants, *, alone: bool
    ) -> dict[ir.Value, np.ndarray]:
        """`_evaluate` with a call per round of nodes whose inputs are all known, each sized
        here before it goes."""
        known = _Constants(constants.values)
        known.extra = constants.extra.copy()
        results: dict[ir.Value, np.ndarray] = {}
        remaining = list(batch)
        too_big: dict[ir.Node, int] = {}
        while remaining:
            ready = [n for n in remaining if all(v is None or v in known for v in n.inputs)]
            if not ready:
                break  # the rest depends on nodes that were skipped
            remaining = [n for n in remaining if n not in set(ready)]
            run = []
            for node in ready:
                size = output_bytes(node, known)
                if self.threshold is not None and size is not None and size > self.threshold:
                    too_big[node] = size
                else:
                    run.append(node)
            computed, over = self._run(run, known, alone=alone)
            too_big.update(over)
            known.update(computed)
            results.update(computed)
        self._report_too_big(too_big)
        return results

    def _run(
        self, nodes: list[ir.Node], known: _Constants, *, alone: bool
    ) -> tuple[dict[ir.Value, np.ndarray], dict[ir.Node, int]]:
        """Evaluate independent nodes in the child; their values, and those found too big."""
        if not nodes:
            return {}, {}
        feeds = {v.name or "": known[v] for v in _inputs_from_outside(nodes)}
        return self._collect(nodes, self.start_evaluator().evaluate(nodes, feeds, alone=alone))

    def _collect(
        self, nodes: Sequence[ir.Node], result: BatchResult
    ) -> tuple[dict[ir.Value, np.ndarray], dict[ir.Node, int]]:
        """The values a child computed for `nodes`, and the nodes it found too big; the
        nodes it could not evaluate are logged and skipped from now on."""
        for index, reason in sorted(result.failed.items()):
            node = nodes[index]
            self.skipped.add(node)
            self.status.warn(f"not folded: {node.name} ({node.op_type}): {reason}")
            self.status.count("nodes_not_evaluated")
        values = {
            v: result.values[v.name or ""]
            for node in nodes
            for v in node.outputs
            if (v.name or "") in result.values
        }
        return values, {nodes[i]: size for i, size in result.too_big.items()}

    def _report_too_big(self, too_big: dict[ir.Node, int]) -> None:
        if not too_big:
            return
        self.skipped.update(too_big)
        sizes = (f"{node.name} ({size} bytes)" for node, size in too_big.items())
        self._report(
            "nodes_over_threshold",
            len(too_big),
            f"kept {len(too_big)} node(s) whose result exceeds {self.threshold} bytes: "
            f"{_names(sizes)}",
        )

    def _apply(
        self, graph: ir.Graph, candidates: list[ir.Node], values: dict[ir.Value, np.ndarray]
    ) -> int:
        folded = [node for node in candidates if all(v in values for v in node.outputs)]
        if not folded:
            return 0
        members = set(folded)
        for node in folded:
            for value in node.outputs:
                outside = any(user not in members for user, _ in value.uses())
                if outside or value.is_graph_output():
                    self._replace_with_initializer(graph, value, values[value])
        # together: `folded` is not in graph order (a Shape of a folded Concat's result can
        # come before the Concat), so one node at a time could go while a member reads it
        graph.remove(folded, safe=True)
        self._report("nodes_folded", len(folded), f"folded {len(folded)} node(s): {_by_op(folded)}")
        return len(folded)

    def _replace_with_initializer(
        self, graph: ir.Graph, value: ir.Value, array: np.ndarray | ir.TensorProtocol
    ) -> None:
        name = value.name or ""
        value.name = f"{name}__folded"
        tensor: ir.TensorProtocol
        if isinstance(array, np.ndarray):
            # not np.ascontiguousarray: it turns a 0-d scalar into shape [1]
            tensor = ir.Tensor(np.array(array, order="C"), name=name)
        else:
            tensor = _named(array, name)
        constant = ir.Value(
            name=name,
            type=ir.TensorType(tensor.dtype),
            shape=ir.Shape(tensor.shape.numpy()),
            const_value=tensor,
        )
        value.replace_all_uses_with(constant, replace_graph_outputs=True)
        graph.register_initializer(constant)

    # ---------------------------------------------------------- simplify
    def simplify(self, number: int, near: list[ir.Value] | None = None) -> bool:
        self.number = number
        simplifier = Simplifier()
        before = _node_count(self.model)
        applied = simplifier.run(self.model.graph, near)
        count = before - _node_count(self.model)  # a rule may remove two nodes (Transposes)
        breakdown = ", ".join(
            f"{op} {n}" for op, n in sorted(simplifier.removed.items(), key=lambda i: -i[1])
        )
        self._report("nodes_simplified", count, f"removed {count} no-op node(s): {breakdown}")
        return bool(applied)

    def fuse_batchnorm(self, number: int) -> bool:
        self.number = number
        fused = fuse_batchnorm(self.model.graph)
        self._report(
            "batchnorms_fused",
            len(fused),
            f"fused {len(fused)} BatchNormalization(s) into Conv: {_names(fused)}",
        )
        return bool(fused)

    # ---------------------------------------------------------- dead nodes
    def remove_dead(self, number: int) -> bool:
        self.number = number
        removed = list(_remove_dead_nodes(self.model.graph))
        initializers = _remove_unused_initializers(self.model.graph)
        functions = len(self.model.functions)
        if functions:
            RemoveUnusedFunctionsPass()(self.model)  # type: ignore[no-untyped-call]
        dropped_functions = functions - len(self.model.functions)
        self._report(
            "nodes_removed", len(removed), f"removed {len(removed)} dead node(s): {_names(removed)}"
        )
        self._report(
            "initializers_removed",
            len(initializers),
            f"removed {len(initializers)} unused initializer(s): {_names(initializers)}",
        )
        if dropped_functions:
            self.status.count("functions_removed", dropped_functions)
        # unused initializers and functions leave nothing for a next pass to do; a node that
        # went may have been the other user that kept a rule from applying
        return bool(removed)


def constant_value(node: ir.Node) -> np.ndarray | None:
    """The value of a Constant node (None for sparse constants, which stay nodes)."""
    tensor = constant_tensor(node)
    return None if tensor is None else tensor.numpy()


def constant_tensor(node: ir.Node) -> ir.TensorProtocol | None:
    """The tensor of a Constant node, unread when it is a `value` (None for sparse ones)."""
    for name, attr in node.attributes.items():
        if name == "value" and attr.type == ir.AttributeType.TENSOR:
            # not attr.as_tensor(): its isinstance check against a Protocol costs more than
            # the rest of lifting the constant
            return cast(ir.TensorProtocol, attr.value)
        if name == "value":
            return attr.as_tensor()  # raises the error a malformed attribute deserves
        array = _constant_literal(name, attr)
        if array is not None:
            return ir.Tensor(array)
    return None


def _constant_literal(name: str, attr: ir.Attr) -> np.ndarray | None:
    if name == "value_float":
        return np.array(attr.as_float(), dtype=np.float32)
    if name == "value_floats":
        return np.array(attr.as_floats(), dtype=np.float32)
    if name == "value_int":
        return np.array(attr.as_int(), dtype=np.int64)
    if name == "value_ints":
        return np.array(attr.as_ints(), dtype=np.int64)
    if name == "value_string":
        return np.array(attr.as_string().encode(), dtype=object)
    if name == "value_strings":
        return np.array([s.encode() for s in attr.as_strings()], dtype=object)
    return None


def _static_shape_result(node: ir.Node) -> dict[ir.Value, np.ndarray] | None:
    """`Shape`/`Size` of a tensor whose shape is fully known."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("Shape", "Size"):
        return None
    source = node.inputs[0] if node.inputs else None
    shape = source.shape if source is not None else None
    if shape is None or not all(isinstance(dim, int) for dim in shape):
        return None
    dims = [dim for dim in shape if isinstance(dim, int)]
    if node.op_type == "Size":
        return {node.outputs[0]: np.array(int(np.prod(dims)), dtype=np.int64)}
    start_attr = node.attributes.get("start")
    end_attr = node.attributes.get("end")
    start = start_attr.as_int() if start_attr is not None else 0
    end = end_attr.as_int() if end_attr is not None else len(dims)
    return {node.outputs[0]: np.array(dims[slice(start, end)], dtype=np.int64)}


def _known_dims(shape: ir.Shape | None) -> list[int | None] | None:
    """Dimensions of a shape of known rank: ints, None for symbolic ones."""
    if shape is None:
        return None
    return [dim if isinstance(dim, int) else None for dim in shape]


def _shape_part_result(node: ir.Node, constants: _Constants) -> dict[ir.Value, np.ndarray] | None:
    """Gather/Slice picking static dimensions out of `Shape(x)` when x has free ones."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("Gather", "Slice"):
        return None
    source = node.inputs[0] if node.inputs else None
    shape_node = source.producer() if source is not None else None
    if (
        shape_node is None
        or shape_node.op_type != "Shape"
        or shape_node.domain
        not in (
            "",
            "ai.onnx",
        )
    ):
        return None
    data = shape_node.inputs[0]
    dims = _known_dims(data.shape if data is not None else None)
    if dims is None:
        return None
    start_attr = shape_node.attributes.get("start")
    end_attr = shape_node.attributes.get("end")
    start = start_attr.as_int() if start_attr is not None else 0
    end = end_attr.as_int() if end_attr is not None else len(dims)
    dims = dims[slice(start, end)]
    operands = node.inputs[1:]
    if any(v is not None and v not in constants for v in operands):
        return None
    arrays = [constants[v] if v is not None else None for v in operands]
    picked: np.ndarray | list[int | None]
    try:
        if node.op_type == "Gather":
            axis = node.attributes.get("axis")
            if axis is not None and axis.as_int() not in (0, -1):
                return None
            indices = arrays[0]
            assert indices is not None
            picked = np.array([dims[int(i)] for i in indices.reshape(-1)], dtype=object)
            picked = picked.reshape(indices.shape)
        else:
            starts, ends = arrays[0], arrays[1]
            steps = arrays[3] if len(arrays) > 3 else None
            if starts is None or ends is None or starts.size != 1:
                return None
            step = int(steps.reshape(-1)[0]) if steps is not None else 1
            picked = dims[slice(int(starts.reshape(-1)[0]), int(ends.reshape(-1)[0]), step)]
    except (IndexError, ValueError, AssertionError):
        return None
    flat = list(np.asarray(picked, dtype=object).reshape(-1))
    if any(dim is None for dim in flat):
        return None
    return {node.outputs[0]: np.array(picked, dtype=np.int64)}


def _copied_dims(node: ir.Node) -> set[int]:
    """Output dims of a Reshape that are the input's dim at the same place (a 0 copies it).

    One name is one size: the exporter's names and those onnx's shape inference makes up
    (unk__7), which avoid every name already in the model, so runs never reuse one."""
    source, result = node.inputs[0], node.outputs[0]
    if source is None or source.shape is None or result.shape is None:
        return set()
    return {
        i
        for i, (a, b) in enumerate(zip(source.shape, result.shape, strict=False))
        if isinstance(a, ir.SymbolicDim)
        and isinstance(b, ir.SymbolicDim)
        and a.value is not None
        and a.value == b.value
    }


def _inputs_from_outside(nodes: Sequence[ir.Node]) -> list[ir.Value]:
    produced = {v for node in nodes for v in node.outputs}
    seen: dict[ir.Value, None] = {}
    for node in nodes:
        for value in node.inputs:
            if value is not None and value not in produced:
                seen[value] = None
    return list(seen)


def _remove_dead_nodes(graph: ir.Graph) -> Iterator[str]:
    for node in reversed(list(graph)):
        for subgraph in subgraphs(node):
            yield from _remove_dead_nodes(subgraph)
        if all(not value.uses() and not value.is_graph_output() for value in node.outputs):
            graph.remove(node, safe=True)
            yield node.name or node.op_type


def _remove_unused_initializers(graph: ir.Graph) -> list[str]:
    removed = []
    for name, value in list(graph.initializers.items()):
        if not value.uses() and not value.is_graph_output() and not value.is_graph_input():
            graph.initializers.pop(name)
            removed.append(name)
    return removed


def _named(tensor: ir.TensorProtocol, name: str) -> ir.TensorProtocol:
    """`tensor` under `name`, never renamed in place: a Constant's tensor is shared with the
    model the pass's copy was cloned from (a document, whose undo must give it back as it was).
    In-memory and external tensors are copied shallowly; a proto-backed one keeps its name in
    the shared proto, so its values are copied (a Constant's: small)."""
    if tensor.name == name:
        return tensor
    if isinstance(tensor, (ir.Tensor, ir.ExternalTensor)):
        renamed = copy.copy(tensor)
        renamed.name = name
        return renamed
    return ir.Tensor(tensor.numpy(), name=name)
