"""Saving with external data never loses a byte (issue: "Never lose a byte").

Disk must equal memory after every save, whatever came before (edits, undo, redo, other
documents on the same files, other models in the folder, a save killed half-way).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import CompanionWarning, ModelLoadError, ModelSaveError
from nsdl_jupyter.transforms import convert_tensors, replace_initializer_value

SIZE = 64  # floats per weight: 256 bytes, over the 0-byte threshold used below


def two_weight_model() -> onnx.ModelProto:
    """y = (x * W1) + W2, float32 [SIZE]."""
    w1 = numpy_helper.from_array(np.full(SIZE, 2.0, np.float32), "W1")
    w2 = numpy_helper.from_array(np.arange(SIZE, dtype=np.float32), "W2")
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "W1"], ["m"], name="mul"),
            helper.make_node("Add", ["m", "W2"], ["y"], name="add"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SIZE])],
        initializer=[w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write_external(folder: Path, name: str = "m.onnx", data: str = "m.onnx.data") -> Path:
    path = folder / name
    onnx.save(
        two_weight_model(),
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data,
        size_threshold=0,
    )
    return path


def disk_values(path: Path) -> dict[str, np.ndarray]:
    proto = onnx.load(str(path))  # reads external data, as every runtime does
    return {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}


def memory_values(doc: nj.ModelDocument) -> dict[str, np.ndarray]:
    return {name: v.const_value.numpy() for name, v in doc.graph.initializers.items()}


def assert_disk_is_memory(doc: nj.ModelDocument) -> None:
    assert doc.path is not None
    disk, memory = disk_values(doc.path), memory_values(doc)
    assert disk.keys() == memory.keys()
    for name in disk:
        assert disk[name].dtype == memory[name].dtype, name
        np.testing.assert_array_equal(disk[name], memory[name], err_msg=name)


def run_model(path: Path) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    result: np.ndarray = session.run(None, {"x": np.ones(SIZE, np.float32)})[0]
    return result


ORIGINAL_Y = np.full(SIZE, 2.0, np.float32) + np.arange(SIZE, dtype=np.float32)


# --------------------------------------------------- 1. unrelated files are never replaced
def test_an_unrelated_file_is_refused_and_kept(tmp_path: Path) -> None:
    doc = nj.open_model(write_external(tmp_path))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    with pytest.raises(ModelSaveError, match=r"not this model.s data file.*overwrite=True"):
        doc.save(external_data="notes.txt", size_threshold=0)
    assert notes.read_text() == "my notes"
    assert_disk_is_memory(doc)
    doc.save(external_data="notes.txt", size_threshold=0, overwrite=True)  # asked for
    assert_disk_is_memory(doc)


def test_another_models_weights_are_never_replaced(tmp_path: Path) -> None:
    other = write_external(tmp_path, "other.onnx", "weights.bin")
    doc = nj.open_model(write_external(tmp_path))
    replace_initializer_value(doc, "W1", np.full(SIZE, 5.0, np.float32))
    for overwrite in (False, True):
        with pytest.raises(ModelSaveError, match=r"weights\.bin"):
            doc.save(external_data="weights.bin", size_threshold=0, overwrite=overwrite)
    with pytest.raises(ModelSaveError, match=r"other\.onnx"):
        doc.save(external_data="weights.bin", size_threshold=0, overwrite=True)
    np.testing.assert_array_equal(run_model(other), ORIGINAL_Y)
    doc.set_external("W1", "weights.bin", offset=0)
    with pytest.raises(ModelSaveError, match=r"weights\.bin"):
        doc.save()
    np.testing.assert_array_equal(run_model(other), ORIGINAL_Y)
    assert doc.dirty


def test_save_as_into_the_source_data_file_keeps_the_source(tmp_path: Path) -> None:
    source = write_external(tmp_path)
    doc = nj.open_model(source)
    convert_tensors(doc, ["W1"], "float16")
    edited = doc.save(tmp_path / "m_edited.onnx", external_data="m.onnx.data", size_threshold=0)
    np.testing.assert_array_equal(run_model(source), ORIGINAL_Y)
    assert_disk_is_memory(doc)
    assert edited.name == "m_edited.onnx"
    doc.undo()
    doc.save()
    np.testing.assert_array_equal(run_model(source), ORIGINAL_Y)
    np.testing.assert_array_equal(run_model(edited), ORIGINAL_Y)


# ----------------------------------------------------- 2. undo after save writes the truth
def test_undo_after_save_keeps_disk_equal_to_memory(tmp_path: Path) -> None:
    doc = nj.open_model(write_external(tmp_path))
    convert_tensors(doc, ["W1"], "float16")
    doc.save()
    assert_disk_is_memory(doc)
    doc.undo()
    doc.save()
    assert_disk_is_memory(doc)
    np.testing.assert_array_equal(run_model(tmp_path / "m.onnx"), ORIGINAL_Y)
    doc.redo()
    doc.save()
    assert_disk_is_memory(doc)


def test_a_second_document_on_the_same_file_keeps_its_values(tmp_path: Path) -> None:
    path = write_external(tmp_path)
    first, second = nj.open_model(path), nj.open_model(path)
    for round_ in range(3):  # appends, then compactions replace the file
        replace_initializer_value(first, "W1", np.full(SIZE * 4096, round_, np.float32))
        first.save()
        assert_disk_is_memory(first)
    np.testing.assert_array_equal(memory_values(second)["W1"], np.full(SIZE, 2.0, np.float32))
    second.rename_node("add", "add2")  # any edit, then save over the first's work:
    second.save()  # its file changed under it, so its bytes are written afresh
    assert_disk_is_memory(second)
    np.testing.assert_array_equal(run_model(path), ORIGINAL_Y)


def test_repeated_edits_do_not_grow_the_data_file_without_bound(tmp_path: Path) -> None:
    path = write_external(tmp_path)
    doc = nj.open_model(path)
    big = SIZE * 16384  # 4 MiB
    for round_ in range(6):
        replace_initializer_value(doc, "W1", np.full(big, round_, np.float32))
        doc.save()
        assert_disk_is_memory(doc)
    assert (tmp_path / "m.onnx.data").stat().st_size < 3 * big * 4
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


# ------------------------------------------- 3. data location equal to a model is refused
@pytest.mark.parametrize("location", ["m.onnx", "m.onnx.nsdl.json", "copy.onnx", "./m.onnx"])
def test_data_location_on_a_model_or_companion_is_refused(tmp_path: Path, location: str) -> None:
    source = write_external(tmp_path)
    before = source.read_bytes()
    doc = nj.open_model(source)
    target = tmp_path / "copy.onnx" if location == "copy.onnx" else source
    with pytest.raises(ModelSaveError, match="model file or its companion"):
        doc.save(target, external_data=location, size_threshold=0)
    assert source.read_bytes() == before
    assert not (tmp_path / "copy.onnx").exists()


# --------------------------------------------------- 4. the model's rename is the commit
_CRASH_AT = """
import os, sys
from pathlib import Path
import numpy as np
import nsdl_jupyter as nj
from nsdl_jupyter.transforms import replace_initializer_value

folder, crash_at, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
doc = nj.open_model(folder / "m.onnx")
if mode == "rewrite":  # another program touched the data file: it is rewritten, not appended
    os.utime(folder / "m.onnx.data", ns=(0, 0))
replace_initializer_value(doc, "W1", np.full(64, 7.0, np.float32))
real, calls = os.replace, [0]
def replace(source, destination):
    calls[0] += 1
    if calls[0] == crash_at:
        os._exit(9)  # killed here: no cleanup runs
    real(source, destination)
os.replace = replace
doc.save()
print("CALLS", calls[0])
"""


@pytest.mark.parametrize("mode", ["append", "rewrite"])
def test_a_save_killed_at_any_rename_leaves_a_working_model(tmp_path: Path, mode: str) -> None:
    """Kill the saving process before each of its renames in turn: the model on disk always
    gives the old or the new answer, and the next save cleans what the killed one left."""
    script = tmp_path / "crash.py"
    script.write_text(_CRASH_AT)
    new_y = np.full(SIZE, 7.0, np.float32) + np.arange(SIZE, dtype=np.float32)
    crash_at = 1
    while True:
        folder = tmp_path / f"run{crash_at}"
        folder.mkdir()
        write_external(folder)
        done = subprocess.run(
            [sys.executable, str(script), str(folder), str(crash_at), mode],
            capture_output=True,
            text=True,
            check=False,
        )
        y = run_model(folder / "m.onnx")
        if done.returncode == 0:
            assert "CALLS" in done.stdout
            np.testing.assert_array_equal(y, new_y)
            break
        assert done.returncode == 9, done.stderr
        assert np.array_equal(y, ORIGINAL_Y) or np.array_equal(y, new_y), (crash_at, y[:4])
        later = nj.open_model(folder / "m.onnx")
        later.rename_node("add", "add_after_crash")
        later.save()
        assert_disk_is_memory(later)
        hidden = [p.name for p in folder.iterdir() if p.name.startswith(".")]
        assert hidden == [], hidden
        crash_at += 1
    # append: the model's rename only; rewrite: data, model, data link, model
    assert crash_at == (2 if mode == "append" else 5)


# ------------------------------------------------------------------ 5. and 13. small ones
def test_external_length_shorter_than_the_shape_is_refused_on_open(tmp_path: Path) -> None:
    path = write_external(tmp_path)
    proto = onnx.load(str(path), load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "length":
            entry.value = "16"
    onnx.save(proto, str(path))
    with pytest.raises(ModelLoadError, match="shorter than the 256 bytes"):
        nj.open_model(path)


def test_a_companion_that_cannot_be_written_warns_and_the_model_is_saved(tmp_path: Path) -> None:
    doc = nj.open_model(write_external(tmp_path))
    doc.update_companion("collapsed", ["/a"])
    (tmp_path / "m.onnx.nsdl.json").mkdir()  # a folder where the companion goes
    doc.rename_node("add", "edited")
    with pytest.warns(CompanionWarning, match="could not be written"):
        doc.save()
    assert not doc.dirty
    assert onnx.load(str(tmp_path / "m.onnx")).graph.node[1].name == "edited"


def test_string_initializers_save_inline(tmp_path: Path) -> None:
    doc = nj.new_model()
    doc.create_initializer("s", "'hello'", dtype="string")
    doc.create_initializer("w", np.ones(1000, np.float32))
    doc.save(tmp_path / "s.onnx", external_data=True, size_threshold=0)
    proto = onnx.load(str(tmp_path / "s.onnx"))
    by_name = {t.name: t for t in proto.graph.initializer}
    assert by_name["s"].string_data == [b"hello"]
    assert by_name["s"].data_location == TensorProto.DEFAULT
    np.testing.assert_array_equal(numpy_helper.to_array(by_name["w"]), np.ones(1000))


def test_stale_staging_of_a_dead_process_is_cleaned(tmp_path: Path) -> None:
    path = write_external(tmp_path)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    stale = tmp_path / f".m.onnx.saving-{pid}-abc123"
    stale.mkdir()
    (stale / "m.onnx.data").write_bytes(b"x" * 100)
    live = tmp_path / f".m.onnx.saving-{os.getpid()}-def456"  # our own: in use
    live.mkdir()
    doc = nj.open_model(path)
    doc.save()
    assert not stale.exists() and live.exists()


# ---------------------------------------------- random edit/save/undo/redo sequences
_STEPS = st.lists(
    st.sampled_from(["edit_w1", "edit_w2_big", "fp16", "save", "undo", "redo", "inline"]),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS, value=st.floats(-4, 4, allow_nan=False, width=32))
def test_random_sequences_keep_disk_equal_to_memory(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], value: float
) -> None:
    folder = tmp_path_factory.mktemp("seq")
    path = write_external(folder)
    doc = nj.open_model(path)
    watcher = nj.open_model(path)  # another document open on the same files all along
    original = memory_values(watcher)
    for step in steps:
        if step == "edit_w1":
            replace_initializer_value(doc, "W1", np.full(SIZE, value, np.float32))
        elif step == "edit_w2_big":
            replace_initializer_value(doc, "W2", np.full(SIZE * 8192, value, np.float32))
        elif step == "fp16":
            convert_tensors(doc, ["W1"], "float16")
        elif step == "undo":
            doc.undo()
        elif step == "redo":
            doc.redo()
        elif step == "inline":
            doc.save(external_data=False)
            assert_disk_is_memory(doc)
        else:
            doc.save()
            assert_disk_is_memory(doc)
    doc.save(external_data=True, size_threshold=0)
    assert_disk_is_memory(doc)
    for name, array in memory_values(watcher).items():
        np.testing.assert_array_equal(array, original[name])
