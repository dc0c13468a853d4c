"""convert_opset (issue 9 item 14): onnx's version converter, refused cases with the fix in
the message, checked and validated with onnxruntime like FP16."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.transforms import TransformError, convert_opset
from tests._text_models import save_text
from tests.test_transforms_fp16 import ONNXSCRIPT_LAYER_NORM

LATEST = onnx.defs.onnx_opset_version()

# Softmax changed meaning at 13 (per axis, not flattened), Split's sizes became an input at
# 13 and ReduceSum's axes at 13: the converter must rewrite all three.
OPSET_11 = """<ir_version: 7, opset_import: ["": 11]>
g (float[2, 3, 4] x) => (float[2, 1, 4] a, float[2, 2, 4] b, float[2, 1, 4] s) {
    m = Softmax<axis = 1>(x)
    a, b = Split<axis = 1, split = [1, 2]>(m)
    s = ReduceSum<axes = [1], keepdims = 1>(x)
}"""


def _outputs(path: Path, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [np.asarray(y) for y in session.run(None, {session.get_inputs()[0].name: x})]


@pytest.mark.parametrize("target", [13, LATEST])
def test_upgrade_rewrites_operators_and_keeps_outputs(tmp_path: Path, target: int) -> None:
    source = save_text(tmp_path, OPSET_11)
    out = tmp_path / "out.onnx"
    status = nj.convert_opset(source, out, target)
    assert status.ok, status
    model = onnx.load(str(out))
    assert {o.domain: o.version for o in model.opset_import}[""] == target
    onnx.checker.check_model(model, full_check=True)
    split = next(n for n in model.graph.node if n.op_type == "Split")
    assert len(split.input) == 2  # sizes moved from the attribute to an input
    assert status.counts["validation_rounds"] == 1
    assert sum(line.startswith("validation: output") for line in status.log) == 3
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for before, after in zip(_outputs(source, x), _outputs(out, x), strict=True):
        np.testing.assert_allclose(after, before, rtol=1e-6, atol=1e-6)
    if target >= 21:  # opset 21 needs IR 10: onnxruntime refuses the model otherwise
        assert model.ir_version >= 10
        assert any("IR version raised" in line for line in status.log)


def test_targets_outside_onnx_are_refused_before_writing(tmp_path: Path) -> None:
    source = save_text(tmp_path, OPSET_11)
    out = tmp_path / "out.onnx"
    for bad in (0, LATEST + 1, "13", 13.0, True):
        with pytest.raises(TransformError, match=f"from 1 to {LATEST}"):
            convert_opset(source, out, bad)  # type: ignore[arg-type]
    assert not out.exists()


def test_missing_adapter_names_the_operator_and_what_to_do(tmp_path: Path) -> None:
    source = save_text(tmp_path, OPSET_11)
    upgraded = tmp_path / "up.onnx"
    assert convert_opset(source, upgraded, 18).ok
    with pytest.raises(TransformError, match=r"no adapter for Split at opset 18.*between 18 and"):
        convert_opset(upgraded, tmp_path / "down.onnx", 12)


def test_local_functions_are_refused_unless_inlined(tmp_path: Path) -> None:
    source = save_text(tmp_path, ONNXSCRIPT_LAYER_NORM)  # its epsilon is a reference
    with pytest.raises(TransformError, match=r"local::LayerNorm.*inline_functions=True"):
        convert_opset(source, tmp_path / "out.onnx", 21)
    status = convert_opset(source, tmp_path / "out.onnx", 21, inline_functions=True)
    assert status.ok, status
    model = onnx.load(str(tmp_path / "out.onnx"))
    assert not model.functions
    assert any(n.op_type == "ReduceMean" for n in model.graph.node)


def test_contrib_operators_pass_through_and_validate(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 17, "com.microsoft": 1]>
        g (float[2, 8] x) => (float[2, 8] y) {
            g1 = com.microsoft.FastGelu(x)
            y = Relu(g1)
        }""",
    )
    status = convert_opset(source, tmp_path / "out.onnx", 20)
    assert status.ok, status
    model = onnx.load(str(tmp_path / "out.onnx"))
    imports = {o.domain: o.version for o in model.opset_import}
    assert imports == {"": 20, "com.microsoft": 1}
    assert [n.op_type for n in model.graph.node] == ["FastGelu", "Relu"]
