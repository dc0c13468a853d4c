"""Transforms as onnx_ir passes and the one runner: a pass applied to a file, to a document
(one undo step, a failure changes nothing) and from `nsdl transform`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter import cli
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.transforms import (
    TRANSFORMS,
    ExchangeModel,
    Fp16Pass,
    OpsetPass,
    SanitizePass,
    TensorDtypePass,
    TransformError,
    TransformPass,
    TransformStatus,
    register,
    transform_document,
    transform_file,
)
from tests._document_models import conv_relu_model


def _run(path: Path | onnx.ModelProto) -> list[np.ndarray]:
    source = str(path) if isinstance(path, Path) else path.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    feeds = {}
    for spec in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in spec.shape]
        dtype = np.float16 if spec.type == "tensor(float16)" else np.float32
        feeds[spec.name] = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(dtype)
    return [np.asarray(out, np.float32) for out in session.run(None, feeds)]


def _snapshot(doc: ModelDocument) -> bytes:
    return ir.serde.serialize_model(doc.model).SerializeToString(deterministic=True)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "conv.onnx"
    onnx.save(conv_relu_model(), str(path))
    return path


class _Breaks(TransformPass):
    """Removes every node of the main graph, then fails (a pass with a bug)."""

    operation = "breaks"

    def apply(self, model: ir.Model) -> bool:
        model.graph.remove(list(model.graph), safe=False)
        raise TransformError("broken on purpose, after changing the model")


def test_a_pass_runs_on_a_file_and_leaves_the_source(source: Path, tmp_path: Path) -> None:
    before = source.read_bytes()
    out = tmp_path / "conv16.onnx"
    status = transform_file(Fp16Pass(validate=False), source, out)
    assert status.ok and status.output == out and status.counts["initializers_converted"] >= 1
    result = onnx.load(str(out))
    assert result.graph.initializer[0].data_type == onnx.TensorProto.FLOAT16
    np.testing.assert_allclose(_run(out)[0], _run(source)[0], atol=1e-2)
    assert source.read_bytes() == before


def test_an_edit_pass_runs_on_a_file_too(source: Path, tmp_path: Path) -> None:
    """The document edits of TensorDtypePass apply to the runner's private copy as well."""
    out = tmp_path / "w16.onnx"
    status = transform_file(TensorDtypePass(["w"], "float16"), source, out)
    assert status.ok and status.counts["tensors_converted"] == 1
    types = {t.name: t.data_type for t in onnx.load(str(out)).graph.initializer}
    assert types == {"w": onnx.TensorProto.FLOAT16, "b": onnx.TensorProto.FLOAT}


def test_a_pass_on_a_document_is_one_undo_step(source: Path, tmp_path: Path) -> None:
    doc = nj.open_model(source)
    graph, original = doc.graph, _snapshot(doc)
    expected = _run(source)[0]
    events: list[ChangeEvent] = []
    doc.subscribe(events.append)
    status = transform_document(Fp16Pass(), doc)
    assert status.ok and status.counts["nodes_converted"] >= 1
    assert len(events) == 1 and events[0].structural
    assert doc.undo_description == "convert_to_fp16" and doc.dirty
    assert doc.graph is graph  # views keep their graph object
    assert next(iter(doc.graph.initializers.values())).dtype == ir.DataType.FLOAT16
    saved = doc.save(tmp_path / "edited.onnx")
    np.testing.assert_allclose(_run(saved)[0], expected, atol=1e-2)
    assert doc.undo()
    assert _snapshot(doc) == original and not doc.can_undo
    assert events[-1].source == "undo"
    assert doc.redo()
    assert next(iter(doc.graph.initializers.values())).dtype == ir.DataType.FLOAT16
    assert set(doc.nodes) == {node.name for node in doc.graph}  # the name index follows


def test_a_failing_pass_leaves_the_document_unchanged(source: Path) -> None:
    doc = nj.open_model(source)
    original, nodes = _snapshot(doc), list(doc.graph)
    with pytest.raises(TransformError, match="broken on purpose"):
        transform_document(_Breaks(), doc)
    with pytest.raises(TransformError, match="unknown nodes"):
        transform_document(Fp16Pass(node_block_list=["nope"]), doc)
    assert _snapshot(doc) == original and list(doc.graph) == nodes
    assert not doc.dirty and not doc.can_undo


def test_a_failing_pass_writes_no_file(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "never.onnx"
    with pytest.raises(TransformError, match="broken on purpose"):
        transform_file(_Breaks(), source, out)
    assert not out.exists()


def test_sequential_passes_share_one_status(source: Path, tmp_path: Path) -> None:
    """Passes compose with onnx_ir's Sequential; the runner takes the composite as one."""
    status = TransformStatus("sanitize+fp16")

    class _Both(TransformPass):
        operation = "sanitize+fp16"

        def apply(self, model: ir.Model) -> bool:
            both = ir.passes.Sequential(
                SanitizePass(status=status), Fp16Pass(validate=False, status=status)
            )
            return both(model).modified

    combined = _Both(status=status)
    result = transform_file(combined, source, tmp_path / "both.onnx")
    assert result is status and status.counts["passes"] >= 1
    assert status.counts["initializers_converted"] >= 1
    np.testing.assert_allclose(_run(tmp_path / "both.onnx")[0], _run(source)[0], atol=1e-2)


def test_a_replacing_pass_on_a_document_swaps_back_on_undo(source: Path) -> None:
    doc = nj.open_model(source)
    original = _snapshot(doc)
    opset = doc.opset_imports[""]
    transform_document(OpsetPass(opset + 1, validate=False), doc)
    assert doc.opset_imports[""] == opset + 1
    doc.undo()
    assert _snapshot(doc) == original


def test_exchange_twice_is_no_change(source: Path) -> None:
    model = ir.load(source)
    other = OpsetPass(19, validate=False)(model.clone()).model
    first, second = (ir.serde.serialize_model(m).SerializeToString() for m in (model, other))
    exchange = ExchangeModel(model, other)
    exchange.apply()
    assert ir.serde.serialize_model(model).SerializeToString() == second
    exchange.revert()
    assert ir.serde.serialize_model(model).SerializeToString() == first
    assert ir.serde.serialize_model(other).SerializeToString() == second


@pytest.fixture
def scaled() -> Iterator[str]:
    """A transform added the documented way: one registered class."""

    @register("scale_weights", "multiply every float initializer by `factor`")
    class _Scale(TransformPass):
        operation = "scale_weights"

        def __init__(self, factor: float = 2.0, *, status: TransformStatus | None = None):
            super().__init__(status=status)
            self.factor = factor

        def apply(self, model: ir.Model) -> bool:
            for value in model.graph.initializers.values():
                assert value.const_value is not None
                array = value.const_value.numpy()
                value.const_value = ir.tensor(array * np.float32(self.factor), name=value.name)
                self.status.count("scaled")
            return True

    yield "scale_weights"
    del TRANSFORMS["scale_weights"]


def test_a_registered_pass_runs_from_the_cli_and_on_a_document(
    scaled: str, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["transform", "--list"]) == 0
    assert scaled in capsys.readouterr().out
    out = tmp_path / "scaled.onnx"
    assert cli.main(["transform", scaled, str(source), "-o", str(out), "--set", "factor=0.0"]) == 0
    assert "scale_weights: ok" in capsys.readouterr().out
    weights = onnx.numpy_helper.to_array(onnx.load(str(out)).graph.initializer[0])
    assert not weights.any()
    assert cli.main(["transform", scaled, str(source), "-o", str(out), "--set", "nope=1"]) == 2
    assert "unexpected keyword argument 'nope'" in capsys.readouterr().err
    assert cli.main(["transform", "nothing", str(source), "-o", str(out)]) == 2
    assert "no transform named 'nothing'" in capsys.readouterr().err

    doc = nj.open_model(source)
    transform_document(TRANSFORMS[scaled].factory(factor=3.0), doc)
    assert doc.undo_description == "scale_weights"
    doc.undo()
    assert not doc.dirty


class _Miswires(TransformPass):
    """Takes the square root of an int64 constant: a result onnx's checker rejects."""

    operation = "miswires"

    def apply(self, model: ir.Model) -> bool:
        n = len(model.graph.initializers)  # applied twice to one model: new names each time
        shape = ir.Value(
            name=f"k{n}",
            type=ir.TensorType(ir.DataType.INT64),
            shape=ir.Shape([2]),
            const_value=ir.tensor(np.int64([1, 2])),
        )
        model.graph.register_initializer(shape)
        root = ir.Node("", "Sqrt", [shape], name=f"bad_sqrt{n}")
        model.graph.append(root)
        model.graph.outputs.append(root.outputs[0])
        root.outputs[0].name = f"bad{n}"
        root.outputs[0].type, root.outputs[0].shape = shape.type, shape.shape
        return True


def test_a_result_the_checker_rejects_is_a_warning(source: Path, tmp_path: Path) -> None:
    """The runner checks what it wrote; a fault the source already has is only logged."""
    status = transform_file(_Miswires(), source, tmp_path / "bad.onnx")
    assert status.output == tmp_path / "bad.onnx" and (tmp_path / "bad.onnx").is_file()
    (warning,) = status.warnings
    assert "does not pass onnx's checker" in warning and "Sqrt" in warning

    broken = tmp_path / "broken_source.onnx"
    transform_file(_Miswires(), source, broken)
    again = transform_file(_Miswires(), broken, tmp_path / "worse.onnx")
    assert not again.warnings
    assert any("rejects the source model too" in line for line in again.log)
