"""A small graph builder for the example models: TorchScript-style names, seeded weights.

Node names follow the shape torch.onnx's TorchScript exporter gives them
(`/layer1/layer1.0/conv1/Conv`, a `_1` suffix for the second op of a type in a scope) and
outputs are `<node name>_output_<i>`, so the examples look like real exports to every view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

from nsdl_jupyter.examples._errors import ExampleError

Dim = int | str


class GraphBuilder:
    """Collects nodes, initializers and graph inputs/outputs; hands back an `onnx.ModelProto`."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._taken: dict[str, int] = {}
        self._anonymous = 0

    def unique(self, base: str) -> str:
        """`base` the first time, then `base_1`, `base_2`, ... (TorchScript's scheme)."""
        count = self._taken.get(base)
        if count is None:
            self._taken[base] = 1
            return base
        self._taken[base] = count + 1
        return f"{base}_{count}"

    def input(self, name: str, elem_type: int, shape: Sequence[Dim]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def output(self, name: str, elem_type: int, shape: Sequence[Dim] | None) -> None:
        self.outputs.append(
            helper.make_tensor_value_info(name, elem_type, None if shape is None else list(shape))
        )

    def initializer(self, name: str | None, array: npt.NDArray[np.generic]) -> str:
        """Add a weight; `None` gives it an exporter-style anonymous name (`onnx::Conv_12`)."""
        if name is None:
            self._anonymous += 1
            name = f"onnx::Weight_{self._anonymous}"
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def normal(self, name: str | None, shape: Sequence[int], std: float, mean: float = 0.0) -> str:
        """A float32 weight drawn from N(mean, std^2) with the builder's seeded generator."""
        values = self.rng.standard_normal(tuple(shape), dtype=np.float32)
        values *= np.float32(std)
        if mean:
            values += np.float32(mean)
        return self.initializer(name, values)

    def ops(
        self,
        op_type: str,
        scope: str | None,
        inputs: Sequence[str],
        output_count: int,
        *,
        output_names: Sequence[str] | None = None,
        domain: str = "",
        **attributes: Any,
    ) -> list[str]:
        """Add one node named `<scope>/<op_type>[_k]` (`<op_type>_k` if scope is None).

        Returns its output names.
        """
        name = self.unique(op_type if scope is None else f"{scope}/{op_type}")
        outputs = (
            list(output_names)
            if output_names is not None
            else [f"{name}_output_{i}" for i in range(output_count)]
        )
        self.nodes.append(
            helper.make_node(op_type, list(inputs), outputs, name=name, domain=domain, **attributes)
        )
        return outputs

    def op(
        self,
        op_type: str,
        scope: str | None,
        *inputs: str,
        output_name: str | None = None,
        **attributes: Any,
    ) -> str:
        """Add a single-output node; returns the output name."""
        names = None if output_name is None else [output_name]
        return self.ops(op_type, scope, inputs, 1, output_names=names, **attributes)[0]

    def constant(self, scope: str, array: npt.NDArray[np.generic] | float | int) -> str:
        """A `Constant` node in `scope` (TorchScript emits scalars and axes this way)."""
        value = np.asarray(array)
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        return self.op("Constant", scope, value=numpy_helper.from_array(value))

    def model(self, graph_name: str, opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, graph_name, self.inputs, self.outputs, initializer=self.initializers
        )
        opset_ids = [helper.make_opsetid("", opset)]
        return helper.make_model(
            graph,
            opset_imports=opset_ids,
            ir_version=helper.find_min_ir_version_for(opset_ids),
            producer_name="nsdl_jupyter.examples",
        )


def check_opset(builder: str, opset: int, minimum: int) -> None:
    """Refuse opsets the builder cannot express, before any work is done."""
    latest = onnx.defs.onnx_opset_version()
    if not minimum <= opset <= latest:
        raise ExampleError(
            f"{builder}: opset {opset} is not supported; use an opset from {minimum} to {latest}"
        )
