"""A part cut after a size computed from data: its open input dims are measured by running the
source model once at the profile's sizes (`extract_subgraph(dim_sizes=...)`, the Designer's
"Profile from here"), so onnxruntime runs it on random inputs; a source that cannot run gives
one TransformError and leaves everything as it was."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter._runner_files import ORT_RUNNER
from nsdl_jupyter.transforms import TransformError, extract_subgraph
from nsdl_jupyter.widgets.designer._designer import Designer
from tests._text_models import save_text

# What torch's TorchScript exporter writes for torchvision's detection transform: `image` is
# resized by a float scale of the height of `measured` (target / height), which neither onnx's
# inference nor onnxruntime's symbolic inference follows.
_RESIZE_BY_IMAGE_SIZE = """
    shape = Shape({measured})
    i2 = Constant<value = int64 {{2}}>()
    h = Gather<axis = 0>(shape, i2)
    hf = Cast<to = 1>(h)
    target = Constant<value = float {{16.0}}>()
    scale = Div(target, hf)
    z = Constant<value = int64[1] {{0}}>()
    su = Unsqueeze(scale, z)
    ones = Constant<value = float[2] {{1.0, 1.0}}>()
    scales = Concat<axis = 0>(ones, su, su)
    resized = Resize<mode = "linear">({image}, , scales)"""

# ... then added to a branch whose shape is known, and concatenated with it.
_RESIZED_AND_POOLED = (
    """<ir_version: 8, opset_import: ["": 17]>
g (float[batch,3,32,36] images) => (float[batch,6,?,?] out) {"""
    + _RESIZE_BY_IMAGE_SIZE.format(measured="images", image="images")
    + """
    pooled = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(images)
    act = Relu(resized)
    sum = Add(act, pooled)
    out = Concat<axis = 1>(act, sum)
}"""
)

# Free image dims, but a Reshape to 32 x 36 before the resize: it runs at no other size.
_RUNS_AT_32_BY_36 = (
    """<ir_version: 8, opset_import: ["": 17]>
g (float[batch,3,H,W] images) => (float[batch,3,?,?] out) {
    fixed_shape = Constant<value = int64[4] {1, 3, 32, 36}>()
    fixed = Reshape(images, fixed_shape)"""
    + _RESIZE_BY_IMAGE_SIZE.format(measured="images", image="fixed")
    + """
    out = Relu(resized)
}"""
)


def _source(folder: Path, text: str = _RESIZED_AND_POOLED) -> Path:
    path = save_text(folder, text, "m.onnx")
    model = ir.load(path)
    for node in model.graph:  # named after their outputs, as the canvas shows them
        node.name = node.outputs[0].name
    ir.save(model, path)
    return path


def _run_as_profiled(path: Path) -> list[Any]:
    """Run the model on the profiler's own random inputs (its runner's, free dims 1)."""
    spec = importlib.util.spec_from_file_location("_profiled_ort_runner", ORT_RUNNER)
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds, _ = runner._random_inputs(session, {}, 0)
    return list(session.run(None, feeds))


def _input_dims(path: Path) -> dict[str, list[int | str]]:
    return {
        value.name: [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
        for value in onnx.load(str(path)).graph.input
    }


def test_open_cut_dims_are_measured_so_the_part_runs_on_random_inputs(tmp_path: Path) -> None:
    source = _source(tmp_path)
    cut = {"inputs": ["resized", "pooled"], "outputs": ["out"]}
    unsized = tmp_path / "unsized.onnx"
    extract_subgraph(source, unsized, **cut)
    assert _input_dims(unsized)["resized"] != [1, 3, 16, 18]  # what no inference could tell
    with pytest.raises(Exception, match="Concat"):  # made-up sizes: onnxruntime refuses
        _run_as_profiled(unsized)

    before = source.read_bytes()
    sized = tmp_path / "sized.onnx"
    status = extract_subgraph(source, sized, **cut, dim_sizes={})
    assert _input_dims(sized) == {"resized": [1, 3, 16, 18], "pooled": ["batch", 3, 16, 18]}
    assert "resized: dims [1,3,16,18] measured" in str(status)
    (out,) = _run_as_profiled(sized)
    assert out.shape == (1, 6, 16, 18)
    assert source.read_bytes() == before


def test_cuts_whose_dims_are_known_run_nothing(tmp_path: Path) -> None:
    """Dims the profile sizes itself (the graph inputs' names) need no run: a source that
    cannot run at the default sizes is extracted as before."""
    source = _source(tmp_path, _RUNS_AT_32_BY_36)
    out = tmp_path / "part.onnx"
    extract_subgraph(source, out, ["images"], ["fixed"], dim_sizes={})
    assert _input_dims(out)["images"] == ["batch", 3, "H", "W"]


def test_a_source_that_cannot_run_gives_one_error_and_loses_nothing(tmp_path: Path) -> None:
    source = _source(tmp_path, _RUNS_AT_32_BY_36)
    doc = nj.open_model(source)
    before = source.read_bytes()
    outputs = [value.name for value in doc.model.graph.outputs]
    out = tmp_path / "part.onnx"
    with pytest.raises(TransformError, match=r"could not run the source model.*dim_sizes"):
        extract_subgraph(doc, out, ["resized"], ["out"], dim_sizes={})
    assert not out.exists()
    assert [value.name for value in doc.model.graph.outputs] == outputs
    assert not doc.dirty and source.read_bytes() == before
    # at sizes the model runs at, the same cut works
    extract_subgraph(doc, out, ["resized"], ["out"], dim_sizes={"H": 32, "W": 36})
    assert _input_dims(out)["resized"] == [1, 3, 16, 18]


@pytest.mark.parametrize(
    ("dim_sizes", "message"),
    [
        ({"H": 0}, "at least 1"),
        ({"H": True}, "give an integer"),
        ({"H": "32"}, "give an integer"),
        ([("H", 32)], "takes a dict"),
    ],
)
def test_bad_dim_sizes_are_refused_before_any_work(
    tmp_path: Path, dim_sizes: Any, message: str
) -> None:
    source = _source(tmp_path, _RUNS_AT_32_BY_36)
    out = tmp_path / "part.onnx"
    with pytest.raises(TransformError, match=message):
        extract_subgraph(source, out, ["resized"], ["out"], dim_sizes=dim_sizes)
    assert not out.exists()


def test_profile_from_after_a_data_dependent_resize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Designer's "Profile from here" below the resize: the profile runs (it failed with
    onnxruntime's Concat error on made-up sizes)."""
    monkeypatch.chdir(tmp_path)  # where the onnxruntime trace is kept
    designer = Designer(nj.open_model(_source(tmp_path)))
    panel = designer.profile_from(["act"])
    assert panel is not None, designer.status.value
    report = panel.wait(timeout=120)
    assert report is not None, panel.error
    assert {"act", "sum", "out"} <= set(report.node_times())
    designer.close()
