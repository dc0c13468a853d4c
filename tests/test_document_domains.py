"""Local functions stay out of the standard ONNX domains, and check() flags a file where they
did not (issue 22, item 8): a function in 'ai.onnx' made the model import 'ai.onnx' beside
'', a model onnxruntime then reads with the wrong ONNX opset, and check() said nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import GraphEditError
from tests.test_document_bodies import X, function_model


@pytest.mark.parametrize("domain", ["ai.onnx", "", "ai.onnx.ml"])
def test_a_function_in_a_standard_onnx_domain_is_refused(tmp_path: Path, domain: str) -> None:
    source = tmp_path / "functions.onnx"
    onnx.save(function_model(), source)
    doc = nj.open_model(source)
    before = dict(doc.opset_imports)
    with pytest.raises(GraphEditError, match=r"standard ONNX domain.*custom domain"):
        doc.create_function("Twice", domain, ["a"], ["b"])
    assert dict(doc.opset_imports) == before
    assert list(doc.functions) == [("local", "Scaled", "")]
    assert not doc.can_undo and not doc.dirty


def _alias_model() -> onnx.ModelProto:
    """What the old create_function saved: a function in 'ai.onnx', imported at 1 beside ''."""
    model = function_model()
    model.functions[0].domain = "ai.onnx"
    model.graph.node[0].domain = "ai.onnx"
    del model.opset_import[:]
    model.opset_import.extend(
        [onnx.helper.make_opsetid(d, v) for d, v in (("", 17), ("ai.onnx", 1))]
    )
    return model


def test_check_flags_a_file_that_imports_the_default_domain_twice(tmp_path: Path) -> None:
    source = tmp_path / "alias.onnx"
    onnx.save(_alias_model(), source)
    doc = nj.open_model(source)
    errors = [d.message for d in doc.check() if d.severity == "error"]
    assert any("imports the default ONNX domain twice" in m for m in errors), errors
    assert any("local function ai.onnx::Scaled is in the standard ONNX domain" in m for m in errors)

    doc.remove_domain("ai.onnx")
    assert dict(doc.opset_imports) == {"": 17}
    assert not any("twice" in d.message for d in doc.check())
    doc.undo()
    assert dict(doc.opset_imports) == {"": 17, "ai.onnx": 1}


def test_remove_domain_refuses_a_domain_in_use_and_the_default_one(tmp_path: Path) -> None:
    source = tmp_path / "functions.onnx"
    onnx.save(function_model(), source)
    doc = nj.open_model(source)
    with pytest.raises(GraphEditError, match=r"still used by \['block'"):
        doc.remove_domain("local")
    with pytest.raises(GraphEditError, match="default ONNX domain cannot be removed"):
        doc.remove_domain("")
    with pytest.raises(GraphEditError, match="does not import 'vendor'"):
        doc.remove_domain("vendor")
    assert not doc.can_undo
    doc.import_domain("vendor", 2)
    doc.remove_domain("vendor")
    out = doc.save(tmp_path / "out.onnx")
    assert {o.domain for o in onnx.load(out).opset_import} == {"", "local"}
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": X})[0], X * 2 + X)
