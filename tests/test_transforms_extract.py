"""extract_subgraph / extract_body / extract_function: standalone models that pass onnx's
checker and compute what the part computed inside the whole model; errors with fixes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.transforms import (
    TransformError,
    extract_body,
    extract_function,
    extract_subgraph,
)
from tests._text_models import save_text


def _session(model: Path | onnx.ModelProto) -> ort.InferenceSession:
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _checked(path: Path) -> onnx.ModelProto:
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    return model


def test_subgraph_of_a_transformer_computes_the_same_tensor(tmp_path: Path) -> None:
    source = tmp_path / "small.onnx"
    proto = small_transformer()
    onnx.save(proto, str(source))
    cut = "/embeddings/LayerNorm/LayerNormalization_output_0"
    target = "/encoder/layer.0/output/LayerNorm/LayerNormalization_output_0"
    out = tmp_path / "layer0.onnx"
    status = extract_subgraph(source, out, inputs=[cut, "attention_mask"], outputs=[target])
    assert status.ok and status.counts["outputs"] == 1
    model = _checked(out)
    assert [i.name for i in model.graph.input] == [cut, "attention_mask"]
    # the whole model, with the cut and the target exposed as outputs
    whole = onnx.load(str(source))
    whole.graph.output.extend(
        [
            onnx.helper.make_empty_tensor_value_info(cut),
            onnx.helper.make_empty_tensor_value_info(target),
        ]
    )
    session = _session(whole)
    rng = np.random.default_rng(0)
    feeds = {}
    for spec in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in spec.shape]
        feeds[spec.name] = rng.integers(0, 50, shape).astype(np.int64)
    feeds["attention_mask"] = np.ones_like(feeds["attention_mask"])
    feeds["token_type_ids"] = np.zeros_like(feeds["token_type_ids"])
    names = [o.name for o in session.get_outputs()]
    values = dict(zip(names, session.run(None, feeds), strict=True))
    (piece,) = _session(out).run(
        None, {cut: values[cut], "attention_mask": feeds["attention_mask"]}
    )
    np.testing.assert_allclose(piece, values[target], rtol=1e-5, atol=1e-5)


def test_subgraph_errors_say_how_to_fix(tmp_path: Path) -> None:
    source = tmp_path / "small.onnx"
    onnx.save(small_transformer(), str(source))
    target = "/encoder/layer.0/output/LayerNorm/LayerNormalization_output_0"
    with pytest.raises(TransformError, match=r"depend on graph input 'attention_mask'.*add it"):
        extract_subgraph(
            source,
            tmp_path / "o.onnx",
            inputs=["/embeddings/LayerNorm/LayerNormalization_output_0"],
            outputs=[target],
        )
    with pytest.raises(TransformError, match="did you mean 'input_ids'"):
        extract_subgraph(source, tmp_path / "o.onnx", inputs=["input_idz"], outputs=[target])
    with pytest.raises(TransformError, match="at least one output"):
        extract_subgraph(source, tmp_path / "o.onnx", inputs=[], outputs=[])
    assert not (tmp_path / "o.onnx").exists()


IF_MODEL = """<ir_version: 8, opset_import: ["": 18]>
g (bool c, float[2] x) => (float[2] y) {
    w = Constant<value: tensor = float[2] {10, 20}>()
    s = Neg(x)
    y = If(c) <
        then_branch = t () => (float[2] a) { a = Add(s, w) },
        else_branch = e () => (float[2] b) { b = Sub(s, w) }
    >
}"""


def test_if_branch_reads_outer_tensors_as_inputs_and_constants(tmp_path: Path) -> None:
    source = save_text(tmp_path, IF_MODEL)
    if_name = next(n for n, node in nj.open_model(source).nodes.items() if node.op_type == "If")
    out = tmp_path / "then.onnx"
    status = extract_body(source, out, node=if_name, attribute="then_branch")
    model = _checked(out)
    assert [i.name for i in model.graph.input] == ["s"]
    assert [t.name for t in model.graph.initializer] == ["w"]
    assert any("constant w" in line for line in status.log)
    (a,) = _session(out).run(None, {"s": np.array([1, 2], np.float32)})
    np.testing.assert_array_equal(a, [11, 22])
    with pytest.raises(
        TransformError, match="graph attributes are: \\['then_branch', 'else_branch'\\]"
    ):
        extract_body(source, out, node=if_name, attribute="body", overwrite=True)
    with pytest.raises(TransformError, match="no node named"):
        extract_body(source, out, node="Nope", overwrite=True)


def test_loop_body_gets_typed_formal_inputs(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (int64 n, float[2] x) => (float[2] y) {
            t = Constant<value: tensor = bool {1}>()
            y = Loop(n, t, x) <body = body (i, cond, acc) => (c, nacc) {
                c = Identity(cond)
                one = Constant<value_float: float = 1.0>()
                nacc = Add(acc, one)
            }>
        }""",
    )
    loop = next(n for n, node in nj.open_model(source).nodes.items() if node.op_type == "Loop")
    out = tmp_path / "body.onnx"
    extract_body(source, out, node=loop)
    model = _checked(out)
    types = [i.type.tensor_type.elem_type for i in model.graph.input]
    assert types == [onnx.TensorProto.INT64, onnx.TensorProto.BOOL, onnx.TensorProto.FLOAT]
    cond, acc = _session(out).run(
        None, {"i": np.array(0), "cond": np.array(True), "acc": np.array([1, 2], np.float32)}
    )
    assert bool(cond)
    np.testing.assert_array_equal(acc, [2, 3])


FUNCTION_MODEL = """<ir_version: 8, opset_import: ["": 18, "local": 1]>
g (float[3] x) => (float[3] y) { y = local.affine<alpha: float = 2.0>(x) }
<domain: "local", opset_import: ["": 18]>
affine <alpha, beta: float = 1.0> (a) => (b) {
    s = Constant<value_float: float = @alpha>()
    o = Constant<value_float: float = @beta>()
    m = Mul(a, s)
    b = Add(m, o)
}"""


def test_function_typed_from_its_call_site_with_attribute_parameters(tmp_path: Path) -> None:
    source = save_text(tmp_path, FUNCTION_MODEL)
    out = tmp_path / "affine.onnx"
    status = extract_function(source, out, name="affine")
    model = _checked(out)
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert not model.functions
    assert any("call site" in line for line in status.log)
    (b,) = _session(out).run(None, {"a": np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(b, [3, 5, 7])  # alpha from the call, beta default


def test_function_input_types_override_and_errors(tmp_path: Path) -> None:
    source = save_text(tmp_path, FUNCTION_MODEL)
    out = tmp_path / "affine.onnx"
    extract_function(source, out, name="affine", input_types={"a": ("float32", ["n", 5])})
    model = _checked(out)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["n", 5]
    (b,) = _session(out).run(None, {"a": np.ones((2, 5), np.float32)})
    assert b.shape == (2, 5)
    with pytest.raises(TransformError, match=r"no local function 'affin'.*local::affine"):
        extract_function(source, out, name="affin", overwrite=True)
    with pytest.raises(TransformError, match="not inputs of affine"):
        extract_function(
            source, out, name="affine", input_types={"z": ("float", [1])}, overwrite=True
        )


FUNCTION_WITH_IF = """<
   ir_version: 8,
   opset_import: ["" : 17, "local" : 1]
>
main (float[2] x, bool c) => (float[2] y) {
   y = local.Gate <scale: float = 3.0> (x, c)
}
<
  domain: "local",
  opset_import: ["" : 17]
>
Gate <scale> (t, cond) => (out) {
   k = Constant <value_float: float = @scale> ()
   doubled = Add(t, t)
   [gate] out = If (cond) <
      then_branch = g1 () => (float[2] a) { a = Mul(doubled, k) },
      else_branch = g2 () => (float[2] b) { b = Neg(t) }
   >
}"""


def test_body_inside_a_local_function_is_typed_from_the_call_site(tmp_path: Path) -> None:
    source = save_text(tmp_path, FUNCTION_WITH_IF)
    out = tmp_path / "then.onnx"
    status = extract_body(source, out, node="gate", attribute="then_branch")
    model = _checked(out)
    assert not model.functions
    assert [i.name for i in model.graph.input] == ["doubled"]
    assert [t.name for t in model.graph.initializer] == ["k"]  # @scale from the call site
    assert any("local function local::Gate" in line for line in status.log)
    (a,) = _session(out).run(None, {"doubled": np.array([1, -2], np.float32)})
    np.testing.assert_array_equal(a, [3, -6])
    out_else = tmp_path / "else.onnx"
    extract_body(source, out_else, node="gate", attribute="else_branch")
    assert [i.name for i in _checked(out_else).graph.input] == ["t"]
