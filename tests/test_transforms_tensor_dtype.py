"""Batch tensor dtype conversion through the document: preview warnings, one undo step that
restores the original values exactly, attributes, errors before any change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.transforms import (
    TransformError,
    convert_tensors,
    list_tensors,
    preview_tensor_conversion,
    replace_initializer_value,
)

MODEL = """<ir_version: 8, opset_import: ["": 18]>
g (float[4] x, int64[4] i) => (float[4] y, int64[4] j, float[2] k) {
    y = Mul(x, w)
    j = Add(i, n)
    k = Constant<value_floats: floats = [0.1, 70000.0]>()
}"""


def _doc(tmp_path: Path) -> ModelDocument:
    model = ir.from_onnx_text(MODEL)
    initializers = {
        "w": np.array([0.1, 1.0 / 3.0, 2.5, 1e-9], np.float32),
        "n": np.array([1, 300, -200, 7], np.int64),
    }
    for name, array in initializers.items():
        tensor = ir.tensor(array, name=name)
        model.graph.register_initializer(
            ir.Value(
                name=name, type=ir.TensorType(tensor.dtype), shape=tensor.shape, const_value=tensor
            )
        )
    path = tmp_path / "model.onnx"
    ir.save(model, path)
    return nj.open_model(path)


def test_list_tensors_by_dtype(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    names = {ref.name: ref for ref in list_tensors(doc)}
    assert names["w"].kind == "initializer" and names["w"].dtype == ir.DataType.FLOAT
    constant = next(name for name in names if name.endswith(".value_floats"))
    assert names[constant].kind == "attribute" and names[constant].shape == (2,)
    assert {ref.name for ref in list_tensors(doc, "int64")} == {"n"}


def test_preview_warns_about_precision_truncation_and_range(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    preview = preview_tensor_conversion(doc, ["w", "n"], "int8")
    text = "\n".join(preview.warnings)
    assert "lose their fractional part" in text  # w: 0.1, 1/3, 2.5
    assert "outside int8's range" in text and "saturated" in text  # n: 300, -200
    assert "Mul" in text and "needs input 0 (x) of the same type" in text
    half = preview_tensor_conversion(doc, ["w"], "float16")
    (item,) = half.items
    assert any("precision loss" in w for w in item.warnings)
    assert any("underflow" in w for w in item.warnings)  # 1e-9
    assert item.max_abs_error > 0
    assert not doc.dirty  # a preview changes nothing


def test_preview_flags_consumers_that_would_not_type_check(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    (item,) = preview_tensor_conversion(doc, ["w"], "float16").items
    assert any("needs input 0 (x) of the same type, which is float" in w for w in item.warnings)


def test_convert_is_one_undo_step_restoring_values_exactly(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    original = {name: doc.graph.initializers[name].const_value for name in ("w", "n")}
    original_bytes = {name: t.tobytes() for name, t in original.items()}  # type: ignore[union-attr]
    events: list[ChangeEvent] = []
    doc.subscribe(events.append)
    status = convert_tensors(doc, ["w", "n"], "float16")
    assert status.counts["tensors_converted"] == 2
    assert any("precision loss" in w for w in status.warnings)
    assert len(events) == 1 and events[0].initializers
    assert doc.graph.initializers["w"].const_value.dtype == ir.DataType.FLOAT16  # type: ignore[union-attr]
    assert doc.graph.initializers["n"].dtype == ir.DataType.FLOAT16
    assert doc.dirty and doc.undo_description == "convert 2 tensor(s) to FLOAT16"
    assert doc.undo()
    assert not doc.can_undo
    for name in ("w", "n"):
        restored = doc.graph.initializers[name].const_value
        assert restored is original[name]
        assert restored.tobytes() == original_bytes[name]  # type: ignore[union-attr]
    assert doc.graph.initializers["w"].dtype == ir.DataType.FLOAT
    assert events[-1].source == "undo" and not doc.dirty
    assert doc.redo()
    assert doc.graph.initializers["w"].dtype == ir.DataType.FLOAT16


def test_constant_value_floats_become_a_typed_value_tensor(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    name = next(r.name for r in list_tensors(doc) if r.name.endswith(".value_floats"))
    status = convert_tensors(doc, [name], "float16")
    assert any("clamped" in w for w in status.warnings)  # 70000 > 65504
    node = doc.node(name.split(".")[0])
    assert list(node.attributes) == ["value"]
    tensor = node.attributes["value"].as_tensor()
    assert tensor.dtype == ir.DataType.FLOAT16
    np.testing.assert_allclose(tensor.numpy().astype(np.float32), [0.1, 65504], rtol=1e-3)
    path = tmp_path / "converted.onnx"
    doc.save(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    k = session.run(["k"], {"x": np.ones(4, np.float32), "i": np.ones(4, np.int64)})[0]
    assert k.dtype == np.float16
    doc.undo()
    assert list(doc.node(name.split(".")[0]).attributes) == ["value_floats"]


def test_filter_selection_and_list_attribute_rounding(tmp_path: Path) -> None:
    doc = nj.new_model(opset=18)
    x = doc.add_graph_input("x", "float32", [1, 1, 4, 4])
    node = doc.add_node("Resize", inputs=[x], attributes={"mode": "nearest"})
    doc.set_attribute(node, "extrapolation_value", 0.1)
    status = convert_tensors(doc, lambda ref: ref.name.endswith("extrapolation_value"), "float16")
    assert status.counts["tensors_converted"] == 1
    value = node.attributes["extrapolation_value"].as_float()
    assert value == pytest.approx(float(np.float16(0.1)), abs=0)
    assert node.attributes["extrapolation_value"].type == ir.AttributeType.FLOAT


def test_unknown_name_raises_before_any_change(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    with pytest.raises(TransformError, match="did you mean 'w'"):
        convert_tensors(doc, ["w", "ww"], "float16")
    with pytest.raises(TransformError, match="unknown dtype"):
        convert_tensors(doc, ["w"], "float17")
    assert not doc.dirty and not doc.can_undo
    assert doc.graph.initializers["w"].dtype == ir.DataType.FLOAT


def test_replace_initializer_value_is_undoable(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    before = doc.graph.initializers["w"].const_value
    replace_initializer_value(doc, "w", np.zeros(4, np.float32))
    assert not doc.graph.initializers["w"].const_value.numpy().any()  # type: ignore[union-attr]
    doc.undo()
    assert doc.graph.initializers["w"].const_value is before
