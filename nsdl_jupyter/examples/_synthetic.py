"""Network-shaped synthetic DAGs of any size, for scale tests and benchmarks.

Blocks of layers of cheap elementwise ops on small [1, width] tensors: side branches that
merge again, a residual Add at the end of every layer and a Tanh that keeps values bounded,
Concat + Split pairs (a two-output node), about 1.3 edges per node like real networks. Every
node output is consumed, so there is no dead code for a sanitizer to remove.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import onnx

from nsdl_jupyter.examples._errors import ExampleError
from nsdl_jupyter.examples._graph_builder import GraphBuilder, check_opset

_FLOAT = onnx.TensorProto.FLOAT
_UNARY = ("Relu", "Sigmoid", "Neg", "Abs", "Relu", "Sigmoid")
_BINARY = ("Add", "Mul", "Sub", "Max", "Min")
_LAYER_NODES = 6  # the last two of a layer are the residual Add and the bounding Tanh
_LAYERS_PER_BLOCK = 8


class _SyntheticBuilder(GraphBuilder):
    def __init__(self, seed: int, scoped: bool, width: int, opset: int) -> None:
        super().__init__(seed)
        self.scoped = scoped
        self.width = width
        self.opset = opset
        self.recent: deque[str] = deque(maxlen=8)
        self.pending: deque[str] = deque()  # side-branch outputs nobody consumes yet

    def node(self, op_type: str, scope: str, *inputs: str, outputs: int = 1) -> list[str]:
        attributes: dict[str, Any] = {}
        if op_type in ("Concat", "Split"):
            attributes["axis"] = 1
        if op_type == "Split" and self.opset >= 18:
            attributes["num_outputs"] = outputs
        # unscoped: flat names (`Add_413`), as exporters that drop module scopes write them
        return self.ops(op_type, scope if self.scoped else None, inputs, outputs, **attributes)

    def pick(self, items: tuple[str, ...] | deque[str]) -> str:
        return items[int(self.rng.integers(len(items)))]

    def weight(self, scope: str) -> str:
        name = f"{scope.strip('/').replace('/', '.')}.weight" if self.scoped else None
        name = None if name is None else self.unique(name)
        return self.normal(name, (self.width,), 0.5)

    def step(self, current: str, scope: str, room: int, layer_room: int) -> str:
        """One free node (or a Concat + Split pair); returns the new main-path tensor.

        `room` counts the nodes left before the end (pending merges excluded), `layer_room`
        the free slots left in this layer before its residual Add.
        """
        roll = self.rng.random()
        if roll < 0.1 and room >= 3 and layer_room >= 2:
            # Concat + Split: a two-output node whose second output merges later
            other = self.pending.popleft() if self.pending else self.pick(self.recent)
            joined = self.node("Concat", scope, current, other)[0]
            first, second = self.node("Split", scope, joined, outputs=2)
            self.pending.append(second)
            return first
        if roll < 0.25 and room >= 2:
            # a side branch off an earlier tensor, merged later by a binary op
            source = self.pick(self.recent)
            self.pending.append(self.node(self.pick(_UNARY), scope, source)[0])
            return current
        if roll < 0.5:
            return self.node(self.pick(_UNARY), scope, current)[0]
        other = self.pending.popleft() if self.pending else self.weight(scope)
        return self.node(self.pick(_BINARY), scope, current, other)[0]


def synthetic_dag(
    num_nodes: int,
    seed: int = 0,
    scoped: bool = True,
    *,
    width: int = 16,
    opset: int = 17,
) -> onnx.ModelProto:
    """A DAG of exactly `num_nodes` nodes named `/block17/layer3/Add` (flat when not scoped).

    Input `input` and output `output` are float32 [1, width]; it runs in onnxruntime in
    milliseconds even at 20,000 nodes.
    """
    check_opset("synthetic_dag", opset, 13)
    if num_nodes < 1:
        raise ExampleError(f"synthetic_dag: num_nodes={num_nodes}; ask for at least 1 node")
    b = _SyntheticBuilder(seed, scoped, width, opset)
    current = layer_input = b.input("input", _FLOAT, (1, width))
    b.recent.append(current)
    position = 0
    # Stop early enough that one Add per pending branch lands exactly on num_nodes.
    while (room := num_nodes - len(b.nodes) - len(b.pending)) > 0:
        block, layer = divmod(position // _LAYER_NODES, _LAYERS_PER_BLOCK)
        scope = f"/block{block}/layer{layer}"
        before = len(b.nodes)
        if position % _LAYER_NODES == _LAYER_NODES - 2:
            current = b.node("Add", scope, current, layer_input)[0]
        elif position % _LAYER_NODES == _LAYER_NODES - 1:
            current = layer_input = b.node("Tanh", scope, current)[0]
        else:
            layer_room = _LAYER_NODES - 2 - position % _LAYER_NODES
            current = b.step(current, scope, room, layer_room)
        position += len(b.nodes) - before
        b.recent.append(current)
    while b.pending:
        current = b.node("Add", "/head", current, b.pending.popleft())[0]
    # the last node's only output is the main path: it becomes the graph output
    b.nodes[-1].output[0] = "output"
    b.output("output", _FLOAT, (1, width))
    return b.model("synthetic_dag", opset)
