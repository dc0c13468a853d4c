"""The optimization-profile form: state (editors._trt_profiles) and widget, through doc.tensorrt."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsdl_jupyter.document import ModelDocument, TensorRtPropertyError
from nsdl_jupyter.editors import apply_profile, parse_dims, profile_rows
from nsdl_jupyter.widgets import Designer, OptimizationProfileForm
from tests._document_models import dynamic_conv_document


@pytest.fixture
def doc(tmp_path: Path) -> ModelDocument:
    return dynamic_conv_document(tmp_path)


def test_parse_dims_forms_and_errors() -> None:
    assert parse_dims("1x3x224x224", "x") == [1, 3, 224, 224]
    assert parse_dims("[1, 3, 8]", "x") == [1, 3, 8]
    assert parse_dims("2,4", "x") == [2, 4]
    with pytest.raises(TensorRtPropertyError, match="x min: '1x-3' is not a shape"):
        parse_dims("1x-3", "x min")


def test_rows_default_then_apply_as_one_step(doc: ModelDocument) -> None:
    (row,) = profile_rows(doc, 0)
    assert (row.input, row.dims, row.min, row.opt, row.max) == (
        "x", "Nx3xHx8", "1x3x1x8", "1x3x1x8", "1x3x1x8",
    )  # fmt: skip
    apply_profile(doc, 0, {"x": ("1x3x8x8", "2x3x16x8", "4x3x32x8")})
    assert doc.tensorrt.profiles == [
        {"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 16, 8], "max": [4, 3, 32, 8]}}
    ]
    assert profile_rows(doc, 0)[0].opt == "2x3x16x8"
    assert doc.undo_description == "optimization profile 0"
    with pytest.raises(TensorRtPropertyError, match="min <= opt <= max"):
        apply_profile(doc, 1, {"x": ("4x3x8x8", "2x3x8x8", "4x3x8x8")})
    assert len(doc.tensorrt.profiles) == 1 and doc.undo_description == "optimization profile 0"
    with pytest.raises(TensorRtPropertyError, match="at least one input"):
        apply_profile(doc, 1, {"x": ("", " ", "")})


def test_widget_apply_remove_errors_and_undo(doc: ModelDocument) -> None:
    form = OptimizationProfileForm(doc)
    assert [label for label, _ in form.profile.options] == ["new profile"]
    assert form.remove_button.disabled
    low, mid, high = form.fields["x"]
    low.value, mid.value, high.value = "1x3x8x8", "2x3x8x8", "8x3x8x8"
    form.apply_button.click()
    assert doc.tensorrt.profiles[0]["x"]["max"] == [8, 3, 8, 8]
    assert [label for label, _ in form.profile.options] == ["profile 0", "new profile"]
    form.profile.value = 1
    form.fields["x"][0].value = "1x4x8x8"
    form.apply_button.click()
    assert "dimension 1 is fixed at 3" in form.message.text
    assert len(doc.tensorrt.profiles) == 1
    form.profile.value = 0
    form.remove_button.click()
    assert doc.tensorrt.profiles == []
    doc.undo()
    assert form.fields["x"][2].value == "8x3x8x8"  # the form follows undo


def test_designer_has_the_tensorrt_tab(doc: ModelDocument) -> None:
    designer = Designer(doc)
    assert designer.right.tabs.get_title(2) == "TensorRT"
    assert designer.trt_profiles.doc is doc
    designer.close()
