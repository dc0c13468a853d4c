"""Evaluate nodes whose inputs are all constant, for constant folding, in a child process.

onnxruntime on the CPU computes them (the kernels the folded model would have used, so the
folded values are the ones the runtime would compute); nodes it cannot run (an operator it
lacks) fall back to onnx's reference evaluator. Both run native code on model data nobody
here wrote, so `Evaluator` sends each batch to one `IsolatedWorker` child: a segfault, an
out-of-memory or a hang ends that child and fails the batch, never the kernel. A batch holds
independent nodes (inputs known); it goes through one session, and when that fails each node
is tried alone so one bad node does not stop the others. A chain (nodes that read each
other's outputs) goes in one call too: the child runs it in rounds of ready nodes and sizes
each node before it runs it, as the parent would (each call is a wake-up of the child, which
a busy machine makes cost milliseconds). The child outlives one sanitize: the next one finds
it started. Small exact shape arithmetic never comes here: `_small_ops` computes it in the
kernel with numpy, sized first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import NsdlError, first_line
from nsdl_jupyter._isolated import (
    DEFAULT_MEMORY_LIMIT,
    ChildRaisedError,
    IsolatedRunError,
    IsolatedWorker,
)
from nsdl_jupyter.transforms._estimate import output_bytes

# One batch may take this long before its child is stopped (folding is milliseconds per node).
_BATCH_TIMEOUT_S = 300.0
# After this many dead children in one batch the rest of it is given up (each costs a spawn).
_CRASHES_PER_BATCH = 3
_PRELOAD = ("nsdl_jupyter.transforms._evaluate", "onnxruntime")


class EvaluationError(NsdlError, RuntimeError):
    """Neither onnxruntime nor the reference evaluator could compute a node."""


@dataclass
class BatchResult:
    """What a batch gave: output values by name, and per node index why it gave none."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    too_big: dict[int, int] = field(default_factory=dict)  # index -> bytes it would take


_shared: IsolatedWorker | None = None
_shared_lock = threading.Lock()


def _worker(memory_limit: int) -> IsolatedWorker:
    """The kernel's one folding child, kept between sanitize calls so only the first pays
    for the spawn and the imports; its cap grows when a model needs a larger one."""
    global _shared  # noqa: PLW0603 -- one child per process, by design
    if _shared is not None:
        _shared.raise_memory_limit(memory_limit)
    else:
        _shared = IsolatedWorker(memory_limit=memory_limit, preload=_PRELOAD)
    return _shared


def close_folding_process() -> None:
    """End the kernel's folding child (it holds ~100 MB while idle); the next fold starts
    a new one."""
    global _shared  # noqa: PLW0603 -- one child per process, by design
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None


class Evaluator:
    """Evaluates batches of nodes of one model in the kernel's folding child process.

    `memory_limit` caps the child's address space; `max_bytes` drops results larger than
    that before they cross back (None: any size). Calls from several threads take turns.
    """

    def __init__(
        self, model: ir.Model, *, max_bytes: int | None, memory_limit: int | None = None
    ) -> None:
        context = onnx.ModelProto(ir_version=model.ir_version)
        for domain, version in model.graph.opset_imports.items():
            context.opset_import.append(onnx.helper.make_opsetid(domain, version))
        context.functions.extend(ir.serde.serialize_function(f) for f in model.functions.values())
        self._context = context.SerializeToString()
        self._max_bytes = max_bytes
        self._memory_limit = memory_limit or DEFAULT_MEMORY_LIMIT

    def start(self) -> None:
        """Spawn the child now if it is not running (its imports overlap the caller's work)."""
        with _shared_lock:
            _worker(self._memory_limit).start()

    def evaluate_chain(
        self, nodes: Sequence[ir.Node], feeds: Mapping[str, np.ndarray]
    ) -> BatchResult:
        """Outputs of `nodes` (in graph order, each reading `feeds` or outputs of nodes before
        it) in one call: rounds of ready nodes, each node sized before it runs; one over
        `max_bytes` is reported in `too_big`, never computed. Raises IsolatedRunError when
        the child dies (then `evaluate` round by round, `alone`, finds the node to blame)."""
        graph = onnx.GraphProto()
        graph.input.extend(onnx.ValueInfoProto(name=name) for name in feeds)
        graph.node.extend(ir.serde.serialize_node(node) for node in nodes)
        graph.value_info.extend(
            ir.serde.serialize_value(value)
            for node in nodes
            for value in node.outputs
            if value.type is not None
        )
        return self._call(evaluate_chain, graph.SerializeToString(), feeds)

    def evaluate(
        self, nodes: Sequence[ir.Node], feeds: Mapping[str, np.ndarray], *, alone: bool = False
    ) -> BatchResult:
        """Outputs of independent `nodes` whose inputs are all in `feeds`.

        A batch that ends its child is retried node by node in a fresh one (a child the OS
        killed while idle costs a retry, not a node); a node that ends the child on its own
        is reported in `failed` with the reason. `alone`: node by node from the start.
        """
        protos = [ir.serde.serialize_node(node).SerializeToString() for node in nodes]
        if not alone:
            try:
                return self._call(evaluate_batch, protos, feeds)
            except ChildRaisedError as error:
                if len(nodes) == 1:
                    return BatchResult(failed={0: _isolation_reason(error)})
            except IsolatedRunError:
                pass
        result = BatchResult()
        crashes = 0
        for index, (node, proto) in enumerate(zip(nodes, protos, strict=True)):
            if crashes >= _CRASHES_PER_BATCH:
                result.failed[index] = f"not tried: {crashes} evaluating processes died before it"
                continue
            mine = {v.name or "": feeds[v.name or ""] for v in node.inputs if v is not None}
            try:
                single = self._call(evaluate_batch, [proto], mine)
            except (IsolatedRunError, ChildRaisedError) as error:
                result.failed[index] = _isolation_reason(error)
                crashes += isinstance(error, IsolatedRunError)
                continue
            result.values.update(single.values)
            if 0 in single.failed:
                result.failed[index] = single.failed[0]
            if 0 in single.too_big:
                result.too_big[index] = single.too_big[0]
        return result

    def _call(
        self,
        function: Callable[..., BatchResult],
        nodes: list[bytes] | bytes,  # serialized NodeProtos, or a GraphProto (a chain)
        feeds: Mapping[str, np.ndarray],
    ) -> BatchResult:
        with _shared_lock:
            return _worker(self._memory_limit).call(
                function,
                self._context,
                nodes,
                dict(feeds),
                self._max_bytes,
                timeout=_BATCH_TIMEOUT_S,
            )


def _isolation_reason(error: Exception) -> str:
    if isinstance(error, IsolatedRunError):
        return f"the evaluating process died: {error} (the kernel is fine; the node is kept)"
    return f"evaluation failed in its child process: {first_line(error, 300)}"


# ------------------------------------------------------------ in the child
def evaluate_batch(
    context: bytes,
    nodes: list[bytes],
    feeds: dict[str, np.ndarray],
    max_bytes: int | None,
) -> BatchResult:
    """Runs in the child: every node's outputs, the whole batch at once, else node by node."""
    base = onnx.ModelProto.FromString(context)
    return _evaluate_parsed(
        base, [onnx.NodeProto.FromString(data) for data in nodes], feeds, max_bytes
    )


def evaluate_chain(
    context: bytes, graph: bytes, feeds: dict[str, np.ndarray], max_bytes: int | None
) -> BatchResult:
    """Runs in the child: the nodes of `graph` in rounds of those whose inputs are known, each
    sized (`output_bytes`) before it runs; one that needs a value not computed (too big,
    failed) is left out. With no size limit, one onnxruntime session tries them all first."""
    base = onnx.ModelProto.FromString(context)
    proto = onnx.GraphProto.FromString(graph)
    if max_bytes is None:
        try:
            return BatchResult(values=_run(base, proto.node, feeds, reference=False))
        except EvaluationError:
            pass
    nodes = list(ir.serde.deserialize_graph(proto))
    known = _Known(feeds)
    result = BatchResult()
    waiting = list(range(len(nodes)))
    while waiting:
        ready = [
            i for i in waiting if all(v is None or v.name in known.arrays for v in nodes[i].inputs)
        ]
        if not ready:
            break
        taken = set(ready)
        waiting = [i for i in waiting if i not in taken]
        run = []
        for index in ready:
            size = output_bytes(nodes[index], known)
            if max_bytes is not None and size is not None and size > max_bytes:
                result.too_big[index] = size
            else:
                run.append(index)
        parsed = [proto.node[i] for i in run]
        needed = {name: known.arrays[name] for node in parsed for name in node.input if name}
        part = _evaluate_parsed(base, parsed, needed, max_bytes)
        for position, index in enumerate(run):
            if position in part.failed:
                result.failed[index] = part.failed[position]
            if position in part.too_big:
                result.too_big[index] = part.too_big[position]
        known.arrays.update(part.values)
        result.values.update(part.values)
    return result


@dataclass
class _Known:
    """Values by name, read as `_estimate` reads constants."""

    arrays: dict[str, np.ndarray]

    def shape(self, value: ir.Value) -> tuple[int, ...]:
        return tuple(self.arrays[value.name or ""].shape)

    def itemsize(self, value: ir.Value) -> int:
        return int(self.arrays[value.name or ""].itemsize)

    def __getitem__(self, value: ir.Value) -> np.ndarray:
        return self.arrays[value.name or ""]


def _evaluate_parsed(
    base: onnx.ModelProto,
    parsed: list[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    max_bytes: int | None,
) -> BatchResult:
    result = BatchResult()
    try:
        values = _run(base, parsed, feeds)
    except EvaluationError:
        values = None
    for index, node in enumerate(parsed):
        if values is None:
            try:
                mine = _run(base, [node], {name: feeds[name] for name in node.input if name})
            except EvaluationError as error:
                result.failed[index] = str(error)
                continue
        else:
            mine = {name: values[name] for name in node.output}
        size = sum(array.nbytes for array in mine.values())
        if max_bytes is not None and size > max_bytes:
            result.too_big[index] = size
            continue
        result.values.update(mine)
    return result


def _run(
    base: onnx.ModelProto,
    nodes: Sequence[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    *,
    reference: bool = True,
) -> dict[str, np.ndarray]:
    """Values of every output of `nodes`, computed from `feeds` by onnxruntime, else (when
    `reference`) by onnx's reference evaluator."""
    outputs = [name for node in nodes for name in node.output if name]
    proto = onnx.ModelProto()
    proto.CopyFrom(base)
    graph = proto.graph
    graph.name = "fold"
    graph.node.extend(nodes)
    graph.initializer.extend(
        onnx.numpy_helper.from_array(np.asarray(array), name) for name, array in feeds.items()
    )
    graph.output.extend(onnx.helper.make_empty_tensor_value_info(name) for name in outputs)
    errors = []
    for runner in (_run_ort, _run_reference) if reference else (_run_ort,):
        try:
            results = runner(proto)
        except Exception as error:  # both runtimes raise their own error types
            errors.append(f"{runner.__name__[5:]}: {first_line(error, 300)}")
            continue
        if all(isinstance(result, np.ndarray) for result in results):
            return {name: np.asarray(result) for name, result in zip(outputs, results, strict=True)}
        errors.append(f"{runner.__name__[5:]}: a result is not a tensor")
    raise EvaluationError("; ".join(errors))


def _run_ort(proto: onnx.ModelProto) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return list(session.run(None, {}))


def _run_reference(proto: onnx.ModelProto) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(proto).run(None, {}))
