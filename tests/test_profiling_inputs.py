"""Input folders: one TensorProto per input; errors name the input and say what is wrong."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import external_data_helper, numpy_helper
from test_profiling_helpers import two_input_model

from nsdl_jupyter.profiling import InputFolderError, input_file_name, profile_ort
from nsdl_jupyter.profiling._inputs import load_input_folder, write_npz
from nsdl_jupyter.profiling._model_source import model_source
from nsdl_jupyter.profiling.runners import _ort_runner as runner


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "two.onnx"
    onnx.save(two_input_model(), path)
    return path


def _write(folder: Path, name: str, array: np.ndarray, tensor_name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    tensor = numpy_helper.from_array(array, tensor_name or name.removesuffix(".pb"))
    path.write_bytes(tensor.SerializeToString())
    return path


def test_inputs_from_a_folder_are_the_ones_used(model_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "inputs"
    _write(folder, "ids.pb", np.arange(24, dtype=np.int64).reshape(3, 8))
    _write(folder, "mask.pb", np.ones((3, 8), np.float32))
    report = profile_ort(model_path, input_folder=folder, iterations=2, warmup=0,
                         graph_optimization=False, trace_path=tmp_path / "t.json")  # fmt: skip
    assert report.metadata["inputs"] == {
        "ids": {"shape": [3, 8], "dtype": "int64"},
        "mask": {"shape": [3, 8], "dtype": "float32"},
    }
    assert set(report.layers["name"]) == {"cast", "mul"}
    assert report.layers.set_index("name").loc["mul", "input_shapes"] == "float[3,8], float[3,8]"


def test_onnx_test_data_layout_is_accepted(model_path: Path, tmp_path: Path) -> None:
    """`input_0.pb`, `input_1.pb` whose TensorProto names are the input names."""
    folder = tmp_path / "test_data_set_0"
    _write(folder, "input_0.pb", np.zeros((2, 8), np.int64), tensor_name="ids")
    _write(folder, "input_1.pb", np.ones((2, 8), np.float32), tensor_name="mask")
    report = profile_ort(model_path, input_folder=folder, iterations=1, warmup=0,
                         trace_path=tmp_path / "t.json")  # fmt: skip
    assert report.metadata["inputs"]["ids"]["shape"] == [2, 8]


def test_missing_file_names_the_input_and_lists_what_is_there(
    model_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "inputs"
    _write(folder, "ids.pb", np.zeros((1, 8), np.int64))
    _write(folder, "maks.pb", np.ones((1, 8), np.float32))  # misspelled
    trace = tmp_path / "t.json"
    with pytest.raises(InputFolderError) as info:
        profile_ort(model_path, input_folder=folder, trace_path=trace)
    message = str(info.value)
    assert "'mask'" in message and "mask.pb" in message and "maks.pb" in message
    assert not trace.exists()  # raised before a child process ran


def test_wrong_dtype_names_the_input(model_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "inputs"
    _write(folder, "ids.pb", np.zeros((1, 8), np.int32))  # model wants int64
    _write(folder, "mask.pb", np.ones((1, 8), np.float32))
    with pytest.raises(InputFolderError, match=r"ids\.pb for input 'ids' holds int32 but the "
                       r"model expects int64"):  # fmt: skip
        profile_ort(model_path, input_folder=folder)


def test_wrong_shape_names_the_input(model_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "inputs"
    _write(folder, "ids.pb", np.zeros((1, 8), np.int64))
    _write(folder, "mask.pb", np.ones((1, 9), np.float32))
    with pytest.raises(InputFolderError, match=r"input 'mask' has shape \[1, 9\].*expects"):
        profile_ort(model_path, input_folder=folder)
    _write(folder, "mask.pb", np.ones((8,), np.float32))
    with pytest.raises(InputFolderError, match=r"input 'mask'.*rank 1.*rank 2"):
        profile_ort(model_path, input_folder=folder)


def test_corrupt_file_names_the_input(model_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "inputs"
    _write(folder, "ids.pb", np.zeros((1, 8), np.int64))
    (folder / "mask.pb").write_bytes(b"\xff\xff\xff not a tensor")
    with pytest.raises(InputFolderError, match=r"mask\.pb is not a serialized onnx\.TensorProto"):
        profile_ort(model_path, input_folder=folder)


def test_folder_errors(model_path: Path, tmp_path: Path) -> None:
    with pytest.raises(InputFolderError, match="does not exist"):
        profile_ort(model_path, input_folder=tmp_path / "nope")
    with pytest.raises(ValueError, match="either input_folder"):
        profile_ort(model_path, input_folder=tmp_path, dim_sizes={"batch": 2})


def test_file_names_for_inputs_with_path_characters() -> None:
    assert input_file_name("input_ids") == "input_ids.pb"
    assert input_file_name("encoder/x:0") == "encoder_x_0.pb"


# ---- untrusted folders: special files, sizes, external data, strings ----------------------


def _fixed_batch(model: onnx.ModelProto, batch: int) -> onnx.ModelProto:
    for value in [*model.graph.input, *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_value = batch
    return model


@pytest.mark.timeout(60)
def test_fifo_or_dev_zero_link_for_an_input_is_refused_without_reading(
    model_path: Path, tmp_path: Path
) -> None:
    """Once: a FIFO blocked forever, a link to /dev/zero read until memory ran out."""
    folder = tmp_path / "inputs"
    _write(folder, "mask.pb", np.ones((1, 8), np.float32))
    os.mkfifo(folder / "ids.pb")
    with pytest.raises(InputFolderError, match=r"ids\.pb is a FIFO, device or socket"):
        profile_ort(model_path, input_folder=folder)
    (folder / "ids.pb").unlink()
    (folder / "ids.pb").symlink_to("/dev/zero")
    with pytest.raises(InputFolderError, match=r"ids\.pb is a FIFO, device or socket"):
        profile_ort(model_path, input_folder=folder)


@pytest.mark.timeout(60)
def test_special_files_beside_a_test_data_layout_are_skipped(
    model_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "test_data_set_0"
    _write(folder, "input_0.pb", np.zeros((2, 8), np.int64), tensor_name="ids")
    _write(folder, "input_1.pb", np.ones((2, 8), np.float32), tensor_name="mask")
    os.mkfifo(folder / "a_fifo.pb")
    (folder / "a_zero.pb").symlink_to("/dev/zero")
    report = profile_ort(model_path, input_folder=folder, iterations=1, warmup=0,
                         trace_path=tmp_path / "t.json")  # fmt: skip
    assert report.metadata["inputs"]["mask"]["shape"] == [2, 8]


def test_file_bigger_than_a_fixed_shape_needs_is_refused(tmp_path: Path) -> None:
    model_path = tmp_path / "fixed.onnx"
    onnx.save(_fixed_batch(two_input_model(), 2), model_path)
    folder = tmp_path / "inputs"
    # the widest legal encoding still fits: int64 as 10-byte varints (negative values)
    folder.mkdir()
    ids = onnx.helper.make_tensor("ids", onnx.TensorProto.INT64, [2, 8], [-(2**62)] * 16)
    (folder / "ids.pb").write_bytes(ids.SerializeToString())
    _write(folder, "mask.pb", np.ones((2, 8), np.float32))
    arrays = load_input_folder(folder, model_source(model_path).inputs)
    assert (arrays["ids"] == -(2**62)).all()
    with (folder / "mask.pb").open("ab") as f:
        f.truncate(50_000_000)  # sparse: 50 MB for 16 floats
    with pytest.raises(InputFolderError, match=r"mask\.pb is 50000000 bytes, more than"):
        load_input_folder(folder, model_source(model_path).inputs)


def _external(
    folder: Path, name: str, array: np.ndarray, location: str, offset: int = 0, *, data: bool
) -> None:
    """`<name>.pb` whose bytes live at `location`; with `data`, that file is written too."""
    tensor = numpy_helper.from_array(array, name)
    raw = tensor.raw_data
    external_data_helper.set_external_data(tensor, location, offset=offset, length=len(raw))
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    (folder / f"{name}.pb").write_bytes(tensor.SerializeToString())
    if data:
        (folder / location).parent.mkdir(parents=True, exist_ok=True)
        (folder / location).write_bytes(b"\0" * offset + raw)


def test_external_data_of_an_input_is_read_from_the_input_folder(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once resolved against the working folder; now against the input folder, inside it."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    ids = np.arange(16, dtype=np.int64).reshape(2, 8)
    _external(folder, "ids", ids, "data/ids.bin", offset=24, data=True)
    _external(folder, "mask", np.full((2, 8), 0.5, np.float32), "mask.bin", data=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    arrays = load_input_folder(folder, model_source(model_path).inputs)
    assert np.array_equal(arrays["ids"], ids) and (arrays["mask"] == 0.5).all()
    report = profile_ort(model_path, input_folder=folder, iterations=1, warmup=0,
                         trace_path=tmp_path / "t.json")  # fmt: skip
    assert report.metadata["inputs"]["ids"] == {"shape": [2, 8], "dtype": "int64"}

    (tmp_path / "secret.bin").write_bytes(ids.tobytes())
    _external(folder, "ids", ids, "../secret.bin", data=False)
    with pytest.raises(InputFolderError, match="escapes"):
        load_input_folder(folder, model_source(model_path).inputs)
    _external(folder, "ids", ids, str(tmp_path / "secret.bin"), data=False)
    with pytest.raises(InputFolderError, match="is absolute"):
        load_input_folder(folder, model_source(model_path).inputs)
    (folder / "zero.bin").symlink_to("/dev/zero")
    _external(folder, "ids", ids, "zero.bin", data=False)
    with pytest.raises(InputFolderError, match="escapes"):  # the link resolves outside
        load_input_folder(folder, model_source(model_path).inputs)
    os.mkfifo(folder / "fifo.bin")
    _external(folder, "ids", ids, "fifo.bin", data=False)
    with pytest.raises(InputFolderError, match="FIFO"):
        load_input_folder(folder, model_source(model_path).inputs)
    _external(
        folder, "ids", ids[:1], "short.bin", data=True
    )  # 64 bytes of data for a [2, 8] tensor
    tensor = onnx.load_tensor(str(folder / "ids.pb"))
    del tensor.dims[:]
    tensor.dims.extend([2, 8])
    (folder / "ids.pb").write_bytes(tensor.SerializeToString())
    with pytest.raises(InputFolderError, match="does not fit shape"):
        load_input_folder(folder, model_source(model_path).inputs)


def _string_model() -> onnx.ModelProto:
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["text"], ["out"], name="copy")],
        "strings",
        [onnx.helper.make_tensor_value_info("text", onnx.TensorProto.STRING, [2, 3])],
        [onnx.helper.make_tensor_value_info("out", onnx.TensorProto.STRING, [2, 3])],
    )
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_string_inputs_from_a_folder_run_end_to_end(tmp_path: Path) -> None:
    """Once np.load(allow_pickle=False) refused the object array in the runner."""
    model_path = tmp_path / "strings.onnx"
    onnx.save(_string_model(), model_path)
    text = np.array([["héllo", "", "x" * 1000], ["日本", "a\nb", "z"]], dtype=object)
    folder = tmp_path / "inputs"
    _write(folder, "text.pb", text)
    report = profile_ort(model_path, input_folder=folder, iterations=2, warmup=0,
                         trace_path=tmp_path / "t.json")  # fmt: skip
    assert report.metadata["inputs"]["text"]["shape"] == [2, 3]
    assert set(report.layers["name"]) == {"copy"}

    # the values the runner feeds are exactly the folder's strings
    arrays = load_input_folder(folder, model_source(model_path).inputs)
    strings = write_npz(arrays, tmp_path / "inputs.npz")
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    feeds, _ = runner._file_inputs(session, str(tmp_path / "inputs.npz"), strings)
    (out,) = session.run(None, feeds)
    assert out.tolist() == text.tolist()
