"""Every writer of the package uses the output guard (tested itself in test_output_guard.py).

Each writer is pointed at the model it reads (and at its data and companion): it is refused
with OutputPathError before anything is written, and the model's bytes stay as they were. A
property test then sends random sequences of output paths through several writers.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import nsdl_jupyter as nj
from nsdl_jupyter.cli import main as nsdl
from nsdl_jupyter.document import DocumentError, ModelLoadError, ModelSaveError
from nsdl_jupyter.examples import save_example
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.profiling._model_source import model_source
from nsdl_jupyter.profiling.tensorrt._engine import _remote_output
from nsdl_jupyter.targets import SshTarget
from nsdl_jupyter.transforms import transform_file, transform_named
from tests._output_folder import Folder, make_folder, snapshot
from tests._sshd import free_port

REPORT = Path(__file__).parent / "fixtures" / "ort_cuda_resnet50_b8_noopt_report.json"


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return make_folder(tmp_path)


def refused(write: Callable[[], object], folder: Folder) -> nj.OutputPathError:
    """Run `write`, which must be refused, and check that no file of the folder changed."""
    root = folder.model.parent
    before = snapshot(root)
    with pytest.raises(nj.OutputPathError) as caught:
        write()
    assert snapshot(root) == before
    return caught.value


# ------------------------------------------------------------------ documents
def test_save_as_never_replaces_the_models_files_or_another_models(folder: Folder) -> None:
    doc = nj.open_model(folder.model)
    for path in (folder.data, folder.companion, folder.other_data, folder.other_companion):
        refused(lambda path=path: doc.save(path, overwrite=True), folder)
    error = refused(lambda: doc.save(folder.other), folder)
    assert "pass overwrite=True" in str(error)
    refused(lambda: doc.save(folder.unrelated), folder)
    assert doc.save(folder.other, overwrite=True) == folder.other  # asked for: replaced
    assert folder.data.read_bytes() == snapshot(folder.model.parent)["weights.bin"]


def test_save_in_place_is_not_an_output(folder: Folder) -> None:
    doc = nj.open_model(folder.model)
    doc.set_attribute("conv", "group", 1)
    assert doc.save() == folder.model  # the model's own file: saved as before


# ------------------------------------------------------------------ transforms
TRANSFORMS: dict[str, Callable[[Path, Path], object]] = {
    "convert_to_fp16": lambda m, o: nj.convert_to_fp16(m, o, validate=False),
    "convert_opset": lambda m, o: nj.convert_opset(m, o, 18, validate=False),
    "sanitize": nj.sanitize,
    "extract_subgraph": lambda m, o: nj.extract_subgraph(m, o, ["x"], ["y"]),
    "extract_body": lambda m, o: nj.extract_body(m, o, node="conv"),
    "extract_function": lambda m, o: nj.extract_function(m, o, name="f"),
    "transform_file": lambda m, o: transform_file(transform_named("sanitize").factory(), m, o),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_every_transform_is_refused_on_the_models_files(folder: Folder, name: str) -> None:
    write = TRANSFORMS[name]
    for path in (folder.model, folder.data, folder.companion):
        error = refused(lambda path=path: write(folder.model, path), folder)
        assert "the model being read" in str(error)
    refused(lambda: write(folder.model, folder.unrelated), folder)


def test_a_transform_of_a_document_spares_the_documents_file(folder: Folder) -> None:
    doc = nj.open_model(folder.model)
    refused(lambda: nj.sanitize(doc, folder.data), folder)


def test_a_transform_replaces_an_existing_file_with_overwrite(folder: Folder) -> None:
    target = folder.model.with_name("result.onnx")
    nj.extract_subgraph(folder.model, target, ["x"], ["y"])
    refused(lambda: nj.extract_subgraph(folder.model, target, ["x"], ["y"]), folder)
    nj.extract_subgraph(folder.model, target, ["x"], ["y"], overwrite=True)
    assert onnx.load(str(target)).graph.output[0].name == "y"


def test_a_user_tools_output_is_refused_on_the_model(folder: Folder) -> None:
    tool = nj.UserTool("copy", sys.executable, ["-c", "pass", "$Model", "$Output"])
    for path in (folder.model, folder.data, folder.unrelated):
        refused(lambda path=path: nj.run_tool(tool, folder.model, path), folder)


def test_the_cli_refuses_and_overwrites_on_request(
    folder: Folder, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(folder.model.parent)
    code = nsdl(["extract", str(folder.model), "-o", str(folder.data), "--outputs", "y"])
    assert code == 2
    assert "external data of model.onnx, the model being read" in capsys.readouterr().err
    assert snapshot(folder.model.parent) == before
    args = ["extract", str(folder.model), "-o", str(folder.unrelated), "--outputs", "y"]
    assert nsdl([*args, "--inputs", "x"]) == 2
    assert nsdl([*args, "--inputs", "x", "--overwrite"]) == 0
    assert onnx.load(str(folder.unrelated)).graph.output[0].name == "y"


# ------------------------------------------------------------------ profiling
def test_profile_ort_never_moves_its_trace_over_the_model(folder: Folder) -> None:
    for path in (folder.model, folder.data, folder.companion):
        refused(lambda path=path: nj.profile_ort(folder.model, trace_path=path), folder)
    refused(lambda: nj.profile_ort(folder.model, trace_path=folder.unrelated), folder)


@pytest.mark.parametrize("which", ["model", "data", "companion"])
def test_export_engine_is_refused_on_the_models_files(folder: Folder, which: str) -> None:
    output = getattr(folder, which)
    refused(lambda: nj.export_engine(folder.model, output), folder)
    doc = nj.open_model(folder.model)
    refused(lambda: nj.export_engine(doc, output, overwrite=True), folder)


def test_export_engine_checks_its_side_files(folder: Folder) -> None:
    engine = folder.model.with_name("m.engine")
    engine.with_name("m.engine.build.log").write_text("someone's log")
    refused(lambda: nj.export_engine(folder.model, engine), folder)


def test_export_engine_over_ssh_checks_the_local_path_before_connecting(
    folder: Folder, tmp_path: Path
) -> None:
    target = SshTarget(
        "127.0.0.1", "nobody", free_port(), ssh_config=False, known_hosts=tmp_path / "kh"
    )
    refused(lambda: nj.export_engine(folder.model, folder.data, target=target), folder)


def test_the_remote_engine_never_takes_the_staged_models_name(folder: Folder) -> None:
    source = model_source(folder.model)
    assert _remote_output("/w", "x.engine", source, "/w/model.onnx") == "/w/x.engine"
    for name in ("model.onnx", "weights.bin"):
        remote = _remote_output("/w", name, source, "/w/model.onnx")
        assert remote not in ("/w/model.onnx", "/w/weights.bin")


def test_a_report_is_saved_over_an_earlier_report_only(folder: Folder) -> None:
    report = ProfileReport.load(REPORT)
    for path in (folder.model, folder.other_data, folder.unrelated):
        refused(lambda path=path: report.save(path), folder)
    target = folder.model.with_name("report.json")
    report.save(target)
    report.save(target)  # its own earlier output
    report.save(folder.unrelated, overwrite=True)
    assert ProfileReport.load(folder.unrelated).layers.equals(report.layers)


def test_save_example_is_refused_on_a_model(folder: Folder) -> None:
    refused(lambda: save_example("synthetic_dag", folder.other, num_nodes=5), folder)


def test_save_example_run_again_finds_its_own_file(folder: Folder) -> None:
    """A notebook cell run twice: the same example at the same path is its own earlier output;
    another example there is another model."""
    target = folder.model.with_name("example.onnx")
    save_example("synthetic_dag", target, num_nodes=5)
    save_example("synthetic_dag", target, num_nodes=5)
    with pytest.raises(nj.OutputPathError, match="another ONNX model"):
        save_example("synthetic_dag", target, num_nodes=6)
    save_example("synthetic_dag", target, num_nodes=6, overwrite=True)


# ------------------------------------------------------------------ item 16: our errors
@pytest.mark.parametrize(
    "call",
    [
        nj.profile_ort,
        lambda p: nj.export_engine(p, p.with_name("x.engine")),
        nj.check_trt_capability,
    ],
    ids=["profile_ort", "export_engine", "check_trt_capability"],
)
def test_a_file_that_is_not_onnx_raises_model_load_error(
    tmp_path: Path, call: Callable[[Path], object]
) -> None:
    path = tmp_path / "notes.onnx"
    path.write_bytes(b"\x0a\xff\xff\xff\xff this is not a model")
    with pytest.raises(ModelLoadError, match="not a readable ONNX model"):
        call(path)


def test_a_nul_byte_in_an_external_location_is_a_document_error(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    model = make_folder(tmp_path).model
    proto = onnx.load(str(model), load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "weights\x00.bin"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelLoadError, match="NUL byte"):
        nj.open_model(path)
    doc = nj.open_model(model)
    with pytest.raises(DocumentError, match="NUL byte"):
        _set_external_and_save(doc, "w\x00.bin", tmp_path / "saved.onnx")


def _set_external_and_save(doc: nj.ModelDocument, location: str, path: Path) -> None:
    doc.set_external("w", location)
    doc.save(path)


def test_saving_a_cycle_is_a_save_error_and_writes_nothing(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="A"),
        helper.make_node("Relu", ["a"], ["b"], name="B"),
        helper.make_node("Relu", ["a"], ["y"], name="C"),
    ]
    proto = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    path = tmp_path / "cycle.onnx"
    path.write_bytes(proto.SerializeToString())
    doc = nj.open_model(path)
    with pytest.raises(ModelSaveError, match="cycle"):
        doc.save(tmp_path / "out.onnx")
    assert [node.name for node in doc.graph] == ["A", "B", "C"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cycle.onnx"]


# ------------------------------------------------------------------ property
KINDS = ["model", "data", "companion", "other", "other_data", "other_companion", "unrelated"]
FRESH = ["fresh0.onnx", "fresh1.onnx"]
MODEL_WRITERS = {"save_as", "extract", "tool"}  # the writers that read model.onnx


def _write(writer: str, folder: Folder, path: Path, overwrite: bool) -> None:
    if writer == "save_as":
        nj.open_model(folder.model).save(path, overwrite=overwrite)
    elif writer == "extract":
        nj.extract_subgraph(folder.model, path, ["x"], ["y"], overwrite=overwrite)
    elif writer == "report":
        ProfileReport.load(REPORT).save(path, overwrite=overwrite)
    else:
        tool = nj.UserTool("noop", sys.executable, ["-c", "pass", "$Model", "$Output"])
        nj.run_tool(tool, folder.model, path, overwrite=overwrite).wait(60)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["save_as", "extract", "report", "tool"]),
            st.sampled_from(KINDS + FRESH),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_no_sequence_of_outputs_changes_a_protected_file(
    steps: list[tuple[str, str, bool]],
) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = make_folder(Path(name))
        protected = [folder.model, folder.data, folder.companion]
        protected += [folder.other_data, folder.other_companion]
        original = {path: path.read_bytes() for path in protected}
        other = folder.other.read_bytes()
        for writer, kind, overwrite in steps:
            path = getattr(folder, kind) if kind in KINDS else Path(name) / kind
            with contextlib.suppress(nj.OutputPathError):
                _write(writer, folder, path, overwrite)
            for file in protected:
                assert file.read_bytes() == original[file], (writer, kind, file.name)
            if kind == "other" and overwrite and writer in MODEL_WRITERS:
                other = folder.other.read_bytes()  # replaced as asked, by a model
            assert folder.other.read_bytes() == other, (writer, kind)


# ------------------------------------------------------------------ pictures and pages
def test_an_image_export_is_refused_on_the_models_files(folder: Folder) -> None:
    view = nj.GraphView(nj.open_model(folder.model))
    for path in (folder.model, folder.data, folder.companion):
        refused(lambda path=path: view.export_image(path, "svg", overwrite=True), folder)
    refused(lambda: view.export_image(folder.unrelated, "svg"), folder)
    picture = folder.model.with_name("graph.svg")
    view.export_image(picture).result(10)
    view.export_image(picture).result(10)  # its own earlier picture
    assert picture.read_bytes().lstrip().startswith((b"<svg", b"<?xml"))


def test_a_notebook_page_is_refused_on_a_model(folder: Folder) -> None:
    notebook = folder.model.with_name("nb.ipynb")
    notebook.write_text(
        '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', encoding="utf-8"
    )
    for path in (folder.model, folder.other_data, folder.unrelated):
        refused(lambda path=path: nj.export_notebook_html(notebook, path), folder)
    page = nj.export_notebook_html(notebook)
    assert nj.export_notebook_html(notebook) == page  # its own earlier page


def test_the_designers_save_as_shows_the_refusal(folder: Folder) -> None:
    designer = nj.Designer(nj.open_model(folder.model))
    before = snapshot(folder.model.parent)
    assert designer.save(folder.companion) is None
    assert "the model being read" in designer.status.text
    assert snapshot(folder.model.parent) == before
