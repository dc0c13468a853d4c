"""Profile rows named by the model's own nodes, not by onnxruntime's.

onnxruntime names the rows of its optimized graph (`/layer2/layer2.2/relu_1/Relu_output_0_nchwc`
for a Conv, `node_MatMul_646/MatMulAddFusion`); each row's `onnx_nodes` already says which of
the model's nodes it stands for. The label is the node that takes most of the row's time,
written as module path + op (`/layer2/layer2.2/conv1/Conv`; a dynamo export's
`node_MatMul_12` becomes `/encoder/layer.0/attention/self/query/MatMul`), with the op types
of the other nodes fused into it (`+Relu`). A row onnxruntime inserted (a layout reorder, the
reshapes around a Gemm, the Squeezes of a Gather it split) is no node of the model: it is
named by the node its time goes to and its own op type (`/fc/MatMul (inserted Reshape)`),
not by onnxruntime's made-up name (`gemm_input_reshape_token_24`, `Squeeze_token_18`).
Copies between devices keep their name (`(input copy)`): they are no work of any node.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import pandas as pd

from nsdl_jupyter.graph import scope_of

_ALIASES = frozenset({"Identity", "Constant"})  # weight aliases a fusion takes along: not named
_MAX_FUSED_OPS = 3  # op types listed after the main node's; more are counted
_COPIES = "Memcpy"  # onnxruntime's MemcpyToHost/MemcpyFromHost, the GPU report's copy rows


def node_label(node: ir.Node) -> str:
    """`node` as module path + op: its name when the exporter wrote the path into it
    (TorchScript), else its name scope and op type, else its name."""
    name = node.name or ""
    if "/" in name:
        return name
    scope = scope_of(node)
    if not scope:
        return name or node.op_type
    return "/" + "/".join(scope) + "/" + node.op_type


def node_labels(layers: pd.DataFrame, model: ir.Model) -> list[str]:
    """One label per row of `layers` (see the module docstring): unique, the onnxruntime
    name added in parentheses where two rows would read the same."""
    nodes = {node.name: node for node in model.graph if node.name}
    weights = layers["onnx_weights"] if "onnx_weights" in layers else [None] * len(layers)
    kinds = layers["mapped_as"] if "mapped_as" in layers else [""] * len(layers)
    labels: list[str] = []
    for name, op_type, covered, share, kind in zip(
        layers["name"], layers["op_type"], layers["onnx_nodes"], weights, kinds, strict=True
    ):
        found = [nodes[n] for n in covered if n in nodes]
        if not found or str(op_type).startswith(_COPIES):
            labels.append(str(name))
            continue
        if kind == "inserted":
            labels.append(f"{node_label(found[0])} (inserted {op_type})")
            continue
        shares = _shares(share, len(covered), found, covered)
        labels.append(_row_label(found, shares, str(op_type)))
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [
        f"{label} ({name})" if seen[label] > 1 and label != name else label
        for label, name in zip(labels, layers["name"], strict=True)
    ]


def _shares(
    share: object, count: int, found: Sequence[ir.Node], covered: Sequence[str]
) -> list[float]:
    """The time share of each node in `found` (equal when the row has none)."""
    given = list(share) if isinstance(share, (list, tuple)) and len(share) == count else []
    by_name = dict(zip(covered, given or [1.0] * count, strict=True))
    return [float(by_name.get(node.name or "", 0.0)) for node in found]


def _row_label(found: Sequence[ir.Node], shares: Sequence[float], op_type: str) -> str:
    """The main node: of those with the row's op type (a Conv row is the Conv), the one
    with the largest share (first of equals: the earliest)."""
    same = [i for i, n in enumerate(found) if n.op_type == op_type] or range(len(found))
    main = max(same, key=lambda i: shares[i])
    others = list(
        dict.fromkeys(
            n.op_type for i, n in enumerate(found) if i != main and n.op_type not in _ALIASES
        )
    )
    if not others:
        return node_label(found[main])
    listed = "+".join(others[:_MAX_FUSED_OPS])
    more = f"+{len(others) - _MAX_FUSED_OPS} more" if len(others) > _MAX_FUSED_OPS else ""
    return f"{node_label(found[main])} +{listed}{more}"
