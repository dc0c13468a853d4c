"""Nothing is dropped on save, and nothing wrong is saved without saying so (issue 22, item 9).

A local function's body accepted `create_initializer`, `confirm()` kept it and `save()`
dropped it (FunctionProto has no initializers): the saved function read a tensor that did not
exist, check() flagged it and save went on silently. Now the body refuses it, and a save whose
check has errors still writes everything (an editor's save keeps the user's work) but warns
with the errors; the Designer shows them as an error beside Save."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import InitializerError, SavedWithErrorsWarning
from nsdl_jupyter.widgets import Designer
from tests._document_models import chain_model
from tests.test_document_bodies import X, function_model


def _bytes(doc: nj.ModelDocument) -> bytes:
    return ir.to_proto(doc.model).SerializeToString(deterministic=True)


def test_a_function_body_refuses_an_initializer_and_a_constant_does_the_job(
    tmp_path: Path,
) -> None:
    source = tmp_path / "functions.onnx"
    onnx.save(function_model(), source)
    doc = nj.open_model(source)
    body = doc.open_function("Scaled", "local")
    before = _bytes(body)
    with pytest.raises(InitializerError, match=r"no initializers.*Constant node"):
        body.create_initializer("gain", [3.0])
    assert _bytes(body) == before and not body.can_undo
    # what the message suggests: a Constant node, which a function can hold
    gain = body.add_node("Constant", name="gain_const", attributes={"value_float": 3.0})
    body.connect(gain.outputs[0], "scale", 1, replace=True)
    body.confirm()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedWithErrorsWarning)
        out = doc.save(tmp_path / "out.onnx")
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": X})[0], X * 3 + X)


def _broken(tmp_path: Path) -> nj.ModelDocument:
    """x -> Relu -> Sigmoid -> Neg -> y with Sigmoid's only input disconnected."""
    source = tmp_path / "chain.onnx"
    onnx.save(chain_model(), source)
    doc = nj.open_model(source)
    doc.disconnect("sigmoid", 0)
    assert any(d.severity == "error" for d in doc.check())
    return doc


def test_a_model_with_check_errors_is_saved_whole_and_the_errors_are_said(
    tmp_path: Path,
) -> None:
    doc = _broken(tmp_path)
    with pytest.warns(SavedWithErrorsWarning, match=r"chain\.onnx was saved with 1 check error"):
        written = doc.save()
    (warning,) = [w for w in doc.check() if w.severity == "error"]
    assert warning.node == "sigmoid"
    assert not doc.dirty
    again = nj.open_model(written)
    assert [n.name for n in again.graph] == ["relu", "sigmoid", "neg"]
    assert _bytes(again) == _bytes(doc)  # disk equals memory: nothing was dropped


def test_save_without_check_says_nothing(tmp_path: Path) -> None:
    doc = _broken(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedWithErrorsWarning)
        doc.save(tmp_path / "unchecked.onnx", check=False)


def test_the_designer_shows_the_errors_of_what_it_saved(tmp_path: Path) -> None:
    doc = _broken(tmp_path)
    designer = Designer(doc, check_delay=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SavedWithErrorsWarning)  # shown, not raised
            written = designer.save(tmp_path / "saved.onnx")
        assert written == tmp_path / "saved.onnx" and written.is_file()
        assert "nsdl-error" in designer.status.value
        assert "saved with 1 check error" in designer.status.value
        assert "sigmoid" in designer.status.value
        designer.doc.connect("a", "sigmoid", 0)
        designer.save()
        assert "nsdl-ok" in designer.status.value
    finally:
        designer.close()


def test_small_external_weights_check_clean_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker looked for external data relative to the working directory: a model with
    small external weights checked clean only from its own folder (and would warn on save)."""
    from tests._document_models import conv_relu_model, save_with_external

    folder = tmp_path / "model"
    folder.mkdir()
    save_with_external(conv_relu_model(), folder / "m.onnx", "m.onnx.data")
    monkeypatch.chdir(tmp_path)
    doc = nj.open_model(folder / "m.onnx")
    assert doc.check() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedWithErrorsWarning)
        doc.save()
