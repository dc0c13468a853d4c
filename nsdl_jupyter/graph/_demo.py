"""Small network-shaped models built in code, for tests and benchmarks of the graph view
until (and besides) `nsdl_jupyter.examples` provides its own."""

from __future__ import annotations

import random

import numpy as np
import onnx_ir as ir


def scoped_dag(num_nodes: int, seed: int = 0, *, scoped: bool = True) -> ir.Model:
    """A layered DAG shaped like a network: blocks of a residual chain with side branches,
    torch-style names (``/stage2/block7/Add``) when `scoped`, ``blk7/Add`` otherwise."""
    rng = random.Random(seed)
    x = ir.Value(name="input", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([1, 64]))
    nodes: list[ir.Node] = []
    current = x
    block_size = 8
    n_blocks = max(1, num_nodes // block_size)
    stages = max(1, int(round(n_blocks ** 0.5 / 2)))
    ops = ["Relu", "Sigmoid", "Tanh", "Neg", "Abs"]
    weight = ir.Value(name="weight", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([64, 64]),
                      const_value=ir.tensor(np.zeros((64, 64), dtype=np.float32), name="weight"))
    count = 0
    for b in range(n_blocks):
        prefix = f"/stage{b * stages // n_blocks}/block{b}/" if scoped else f"blk{b}/"
        start = current
        recent = [current]
        for k in range(block_size - 1):
            if count >= num_nodes - 1:
                break
            if k == 0:
                node = ir.node("MatMul", [current, weight], name=f"{prefix}MatMul_{k}")
            elif rng.random() < 0.25 and len(recent) > 1:
                other = recent[rng.randrange(len(recent) - 1)]
                node = ir.node("Add", [current, other], name=f"{prefix}Add_{k}")
            else:
                node = ir.node(rng.choice(ops), [current], name=f"{prefix}{ops[k % len(ops)]}_{k}")
                node.name = f"{prefix}{node.op_type}_{k}"
            nodes.append(node)
            current = node.outputs[0]
            current.name = f"{prefix}t{k}"
            current.type = ir.TensorType(ir.DataType.FLOAT)
            current.shape = ir.Shape([1, 64])
            recent.append(current)
            count += 1
        if count >= num_nodes - 1:
            break
        node = ir.node("Add", [current, start], name=f"{prefix}Residual")
        nodes.append(node)
        current = node.outputs[0]
        current.name = f"{prefix}out"
        count += 1
    graph = ir.Graph([x], [current], nodes=nodes, initializers=[weight], opset_imports={"": 21}, name="dag")
    return ir.Model(graph, ir_version=10)
