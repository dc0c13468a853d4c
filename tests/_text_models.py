"""Models written in the ONNX text format, saved for the transform tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

import onnx_ir as ir

# A model-local function whose body holds a Constant(value_float): peers turn it into a
# DOUBLE tensor (sanitize) or leave it float32 (FP16 conversion).
LOCAL_FUNCTION_CONSTANT = """<ir_version: 8, opset_import: ["": 18, "local": 1]>
    g (float[3] x) => (float[3] y) { y = local.scale(x) }
    <domain: "local", opset_import: ["": 18]>
    scale (a) => (b) {
        c = Constant<value_float: float = 3.0>()
        b = Mul(a, c)
    }"""


def save_text(folder: Path, text: str, name: str = "model.onnx") -> Path:
    """The model `text` (ONNX text format) saved as `folder / name`."""
    path = folder / name
    ir.save(ir.from_onnx_text(text), path)
    return path
