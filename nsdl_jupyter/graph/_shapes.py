"""Tensor types and shapes for the views, from ONNX shape inference run on a weightless copy of
a graph: nothing in the document changes and no large weight is read or copied. A graph's
drawing and its properties pane share one result (`TensorTypes`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

import onnx
import onnx_ir as ir

from nsdl_jupyter._symbolic_shapes import symbolic_dims
from nsdl_jupyter._weightless import weightless_model, weightless_proto
from nsdl_jupyter.graph._skeleton import GraphSkeleton

logger = logging.getLogger(__name__)

_IR_VERSION = 10  # a graph alone says none; 10 reads every graph the views are given
UNKNOWN_DIM = "unk__"  # onnx shape inference's name for a dim it cannot name
TIMES = "\u00d7"  # the multiplication sign, as Netron writes shapes
# onnxruntime's symbolic inference (about 0.1 ms a node) names the dims onnx's loses only up
# to this size: a larger graph keeps `?` rather than wait seconds for its edge labels
SYMBOLIC_NODES = 20_000


def shape_text(shape: Iterable[object] | None) -> str:
    """``1x3x224x224``, ``batchxsequencex768`` (symbolic dims by name, unknown ones ``?``);
    a scalar is ``scalar`` and an unknown rank is ``""``."""
    if shape is None:
        return ""
    dims = [str(d) if isinstance(d, int) else _symbol(getattr(d, "value", None)) for d in shape]
    return TIMES.join(dims) if dims else "scalar"


def _symbol(name: object) -> str:
    """A symbolic dim by its name; ``?`` for an unknown one, or one that shape inference
    named itself (``unk__12``)."""
    text = str(name) if name else ""
    return "?" if not text or text.startswith(UNKNOWN_DIM) else text


@lru_cache(maxsize=4096)
def display_shape(text: str) -> str:
    """The graph table's ``[1,batch,None]`` (str of an ir.Shape) as `shape_text` writes it."""
    if not text:
        return ""
    dims = text.strip("[]")
    if not dims:
        return "scalar"
    return TIMES.join(_symbol(None if d == "None" else d) for d in dims.split(","))


def dtype_text(dtype: ir.DataType | None) -> str:
    """``float``, ``int64``: an element type as the views write it ("" when unknown)."""
    return dtype.name.lower() if dtype is not None else ""


def infer_tensor_types(
    graph: ir.Graph | ir.Function | GraphSkeleton,
) -> dict[str, tuple[str, str]]:
    """Tensor name -> (dtype, shape text) for the values of `graph` whose type the model does
    not state; empty when inference fails (a custom op, an invalid model): then shapes stay
    unknown, as they were."""
    if not isinstance(graph, (ir.Graph, GraphSkeleton)):
        return {}
    missing = any(out.shape is None or out.dtype is None for node in graph for out in node.outputs)
    if not missing:  # the dynamo exporter writes every value_info already
        return {}
    try:
        if isinstance(graph, GraphSkeleton):  # the file's own protobuf: nothing to serialize
            proto = weightless_model(graph.model)
            # as the built graph is inferred: its IR version, no local functions
            proto.ir_version = _IR_VERSION
            del proto.functions[:]
        else:
            proto = weightless_proto(graph, ir_version=_IR_VERSION)
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False, data_prop=True)
    except Exception as error:  # any failure leaves shapes unknown, as before
        logger.info("shape inference for the drawing failed: %s", error)
        return {}
    # read the protobuf fields directly: onnx_ir's deserializer costs 20x as much here
    found: dict[str, tuple[str, str]] = {}
    for info in inferred.graph.value_info:
        tensor = info.type.tensor_type
        shape = ""
        if tensor.HasField("shape"):
            dims = [
                str(d.dim_value) if d.HasField("dim_value") else _symbol(d.dim_param)
                for d in tensor.shape.dim
            ]
            shape = TIMES.join(dims) if dims else "scalar"
        found[info.name] = (_elem_text(tensor.elem_type), shape)
    _name_lost_dims(proto, inferred, found)
    return found


def _name_lost_dims(
    proto: onnx.ModelProto, inferred: onnx.ModelProto, found: dict[str, tuple[str, str]]
) -> None:
    """The shapes onnx's inference left `?` where the graph inputs name their dims (a
    TorchScript BERT: `?x?x768` after its position ids' Slice), in the inputs' names where
    onnxruntime's symbolic inference relates them (`batchxsequencex768`)."""
    named = {
        dim.dim_param
        for info in proto.graph.input
        for dim in info.type.tensor_type.shape.dim
        if dim.HasField("dim_param") and not dim.dim_param.startswith(UNKNOWN_DIM)
    }
    if not named or len(proto.graph.node) > SYMBOLIC_NODES:
        return
    lost = {
        info.name
        for info in inferred.graph.value_info
        if any(
            not dim.HasField("dim_value") and dim.dim_param not in named
            for dim in info.type.tensor_type.shape.dim
        )
    }
    if not lost:
        return
    for name, (_, dims) in symbolic_dims(proto, lost).items():
        if all(isinstance(dim, int) or dim in named for dim in dims):
            found[name] = (found[name][0], TIMES.join(str(dim) for dim in dims) or "scalar")


class TensorTypes:
    """One shape-inference result for one graph, shared by its drawing and its properties pane.

    It runs on demand, by whichever asks first. An edit only marks it stale (`edited`: an edit
    itself infers nothing); the next reader that asks for `fresh` types re-infers once, and
    `listener` hears of it, so a view can send the new result to the other reader.
    """

    def __init__(self, graph: ir.Graph | ir.Function | GraphSkeleton) -> None:
        self.graph = graph
        self.listener: Callable[[], None] | None = None  # called after each inference
        self._found: dict[str, tuple[str, str]] | None = None
        self._edits = 0  # edits seen
        self._inferred_at = -1  # edits seen when `_found` was inferred

    @property
    def last(self) -> Mapping[str, tuple[str, str]] | None:
        """The latest result, stale or not (what the drawing keeps after an edit); None before
        the first inference."""
        return self._found

    @property
    def stale(self) -> bool:
        """True before the first inference and after an edit since the last one."""
        return self._inferred_at != self._edits

    def edited(self) -> None:
        """An edit may have changed types: the next `fresh` infers again."""
        self._edits += 1

    def fresh(self) -> Mapping[str, tuple[str, str]]:
        """The types of the graph as it is now: infers when `stale`, else the shared result."""
        found = self._found
        if found is None or self.stale:
            found = self._found = infer_tensor_types(self.graph)
            self._inferred_at = self._edits
            if self.listener is not None:
                self.listener()
        return found


@lru_cache(maxsize=64)
def _elem_text(elem_type: int) -> str:
    try:
        return dtype_text(ir.DataType(elem_type)) if elem_type else ""
    except ValueError:  # an element type newer than onnx_ir knows
        return ""
