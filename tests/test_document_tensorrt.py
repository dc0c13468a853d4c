"""TensorRT properties of a model (`doc.tensorrt`): undoable, checked, kept in the companion."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import onnx
import pytest

from nsdl_jupyter.document import (
    COMPANION_SUFFIX,
    CompanionWarning,
    DocumentError,
    ModelDocument,
    TensorRtPropertyError,
    open_model,
)
from tests._document_models import dynamic_conv_document, dynamic_conv_model

PROFILE = {"min": [1, 3, 8, 8], "opt": [4, 3, 16, 8], "max": [8, 3, 32, 8]}


@pytest.fixture
def doc(tmp_path: Path) -> ModelDocument:
    return dynamic_conv_document(tmp_path)


def test_profile_set_undo_redo(doc: ModelDocument) -> None:
    assert doc.tensorrt.dynamic_inputs() == {"x": ["N", 3, "H", 8]}
    doc.tensorrt.set_profile("x", **PROFILE)
    doc.tensorrt.set_profile("x", [2, 3, 8, 8], [2, 3, 8, 8], [2, 3, 8, 8], profile=1)
    assert doc.tensorrt.profiles == [{"x": PROFILE}, {"x": {k: [2, 3, 8, 8] for k in PROFILE}}]
    assert doc.dirty and doc.undo_description == "optimization profile 1: x"
    doc.undo()
    assert doc.tensorrt.profiles == [{"x": PROFILE}]
    doc.undo()
    assert doc.tensorrt.profiles == [] and not doc.dirty and "tensorrt" not in doc.companion
    doc.redo()
    assert doc.tensorrt.profiles == [{"x": PROFILE}]
    doc.tensorrt.remove_profile(0)
    assert doc.tensorrt.profiles == []
    doc.undo()
    assert doc.tensorrt.profiles == [{"x": PROFILE}]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.set_profile("nope", **PROFILE), "'nope' is unknown"),
        (lambda t: t.set_profile("w", **PROFILE), "'w' is unknown"),
        (lambda t: t.set_profile("x", [1, 3, 8], [1, 3, 8], [1, 3, 8]), "rank 4"),
        (
            lambda t: t.set_profile("x", [1, 4, 8, 8], [1, 4, 8, 8], [1, 4, 8, 8]),
            "dimension 1 is fixed at 3",
        ),
        (
            lambda t: t.set_profile("x", [4, 3, 8, 8], [2, 3, 8, 8], [8, 3, 8, 8]),
            "min <= opt <= max",
        ),
        (lambda t: t.set_profile("x", [-1, 3, 8, 8], PROFILE["opt"], PROFILE["max"]), ">= 0"),
        (lambda t: t.set_profile("x", **PROFILE, profile=3), "give 0..1"),
        (lambda t: t.remove_profile(2), "has 1 optimization profile"),
        (lambda t: t.set_profiles({"x": PROFILE}), "give a list of profiles"),
        (lambda t: t.set_profiles([{"x": {"min": [1]}}]), "exactly the keys"),
        (lambda t: t.set_layer_precision("conv", "fp64"), "use one of fp32, fp16"),
        (lambda t: t.set_layer_precision("no_such_node", "fp16"), "no_such_node"),
        (lambda t: t.set_layer_precisions([], "fp16"), "give at least one node"),
    ],
)
def test_bad_input_is_refused_and_nothing_changes(doc: ModelDocument, call, message) -> None:
    doc.tensorrt.set_profile("x", **PROFILE)
    doc.tensorrt.set_layer_precision("conv", "fp16")
    before = json.dumps(doc.companion, sort_keys=True)
    undo = doc.undo_description
    with pytest.raises(DocumentError) as info:  # TensorRtPropertyError; GraphEditError: no node
        call(doc.tensorrt)
    assert message in str(info.value)
    assert json.dumps(doc.companion, sort_keys=True) == before
    assert doc.undo_description == undo


def test_static_input_needs_no_profile(tmp_path: Path) -> None:
    model = dynamic_conv_model()
    for dim in model.graph.input[0].type.tensor_type.shape.dim:
        dim.dim_value = dim.dim_value or 4
    path = tmp_path / "static.onnx"
    onnx.save(model, path)
    doc = open_model(path)
    assert doc.tensorrt.dynamic_inputs() == {}
    with pytest.raises(TensorRtPropertyError, match="'x' is static"):
        doc.tensorrt.set_profile("x", [4, 3, 4, 8], [4, 3, 4, 8], [4, 3, 4, 8])


def test_layer_precision_set_clear_and_multi_select_are_one_step(doc: ModelDocument) -> None:
    doc.tensorrt.set_layer_precisions(["conv", "relu"], "fp16")
    assert doc.tensorrt.layer_precisions == {"conv": "fp16", "relu": "fp16"}
    doc.tensorrt.set_layer_precision("relu", "none")
    assert doc.tensorrt.layer_precision("relu") is None
    assert doc.tensorrt.layer_precision(doc.node("conv")) == "fp16"
    doc.tensorrt.set_layer_precision("conv", None)
    assert doc.tensorrt.layer_precisions == {}
    doc.undo()
    doc.undo()
    assert doc.tensorrt.layer_precisions == {"conv": "fp16", "relu": "fp16"}
    doc.undo()
    assert doc.tensorrt.layer_precisions == {} and not doc.can_undo


def test_rename_carries_and_removal_drops_with_undo(doc: ModelDocument) -> None:
    events = []
    doc.subscribe(events.append)
    doc.tensorrt.set_layer_precision("conv", "int8")
    assert events[-1].tensorrt
    doc.rename_node("conv", "conv_a")
    assert doc.tensorrt.layer_precisions == {"conv_a": "int8"}
    doc.remove_node("conv_a")
    assert doc.tensorrt.layer_precisions == {}
    doc.undo()
    assert doc.tensorrt.layer_precisions == {"conv_a": "int8"}
    doc.undo()
    assert doc.tensorrt.layer_precisions == {"conv": "int8"}
    doc.redo()
    doc.redo()
    assert doc.tensorrt.layer_precisions == {}


def test_input_rename_and_removal_follow_profiles(doc: ModelDocument) -> None:
    doc.tensorrt.set_profile("x", **PROFILE)
    doc.rename_tensor("x", "image")
    assert doc.tensorrt.profiles == [{"image": PROFILE}]
    doc.remove_graph_input("image")
    assert doc.tensorrt.profiles == []
    doc.undo()
    doc.undo()
    assert doc.tensorrt.profiles == [{"x": PROFILE}]


def test_companion_round_trip(doc: ModelDocument, tmp_path: Path) -> None:
    doc.tensorrt.set_profiles([{"x": PROFILE}, {"x": {k: [1, 3, 8, 8] for k in PROFILE}}])
    doc.tensorrt.set_layer_precision("relu", "bf16")
    path = doc.save(tmp_path / "saved.onnx")
    stored = json.loads(Path(str(path) + COMPANION_SUFFIX).read_text())
    assert stored["tensorrt"]["layer_precisions"] == {"relu": "bf16"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = open_model(path)
    assert again.tensorrt.profiles == doc.tensorrt.profiles
    assert again.tensorrt.layer_precisions == {"relu": "bf16"}
    assert not again.dirty


def test_malformed_or_unfitting_entries_are_ignored_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(dynamic_conv_model(), path)
    companion = Path(str(path) + COMPANION_SUFFIX)
    companion.write_text(
        json.dumps(
            {
                "version": 1,
                "tensorrt": {
                    "layer_precisions": {"conv": "fp16", "relu": "fp64", "gone": "int8"},
                    "optimization_profiles": [
                        {"x": PROFILE},
                        {"x": {"min": [1], "opt": [1], "max": [1]}},
                        "junk",
                    ],
                },
            }
        )
    )
    with pytest.warns(CompanionWarning) as caught:
        doc = open_model(path)
    text = " ".join(str(w.message) for w in caught)
    assert "malformed tensorrt" in text and "'gone' (no such node)" in text and "rank 4" in text
    assert doc.tensorrt.layer_precisions == {"conv": "fp16"}
    assert doc.tensorrt.profiles == [{"x": PROFILE}]
    companion.write_text('{"tensorrt": [1, 2]}')
    with pytest.warns(CompanionWarning):
        assert open_model(path).tensorrt.profiles == []
