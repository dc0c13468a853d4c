"""Input folders: one TensorProto per input; errors name the input and say what is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from test_profiling_helpers import two_input_model

from nsdl_jupyter.profiling import InputFolderError, input_file_name, profile_ort


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
