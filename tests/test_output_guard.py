"""The one output guard (nsdl_jupyter/_output_guard.py), tested once: what a writer may replace.

A folder like a user's: the model being read with its external data and companion, another
model with its own, an unrelated file, links to protected files, and fresh names. Each writer's
own test (tests/test_output_writers.py) then only proves that it calls the guard.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter._output_guard import guard_output, protected_because
from tests._document_models import conv_relu_model
from tests._output_folder import Folder, make_folder, snapshot


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return make_folder(tmp_path)


@pytest.mark.parametrize("which", ["model", "data", "companion"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_the_model_being_read_and_its_files_are_never_replaced(
    folder: Folder, which: str, overwrite: bool
) -> None:
    path = getattr(folder, which)
    with pytest.raises(nj.OutputPathError) as caught:
        guard_output(path, reading=[folder.model], overwrite=overwrite)
    message = str(caught.value)
    assert str(path) in message
    assert "the model being read" in message
    assert "choose another path" in message
    assert caught.value.path == path
    assert isinstance(caught.value, nj.NsdlError)
    assert isinstance(caught.value, ValueError)


def test_a_companion_that_does_not_exist_yet_is_still_the_models(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(model))
    with pytest.raises(nj.OutputPathError, match=r"companion of m.onnx"):
        guard_output(tmp_path / "m.onnx.nsdl.json", reading=[model], overwrite=True)


def test_links_to_the_models_files_are_those_files(folder: Folder, tmp_path: Path) -> None:
    hard = tmp_path / "copy-of-weights.bin"
    os.link(folder.data, hard)
    symlink = tmp_path / "alias.onnx"
    symlink.symlink_to(folder.model)
    data_symlink = tmp_path / "alias.bin"
    data_symlink.symlink_to(folder.data)
    for path, what in [(hard, "external data"), (symlink, "the model"), (data_symlink, "data")]:
        with pytest.raises(nj.OutputPathError, match=what):
            guard_output(path, reading=[folder.model], overwrite=True)
    # the model read through a link protects the real files too
    with pytest.raises(nj.OutputPathError, match="the model being read"):
        guard_output(folder.data, reading=[symlink], overwrite=True)


def test_another_models_data_and_companion_are_never_replaced(
    folder: Folder, tmp_path: Path
) -> None:
    hard = tmp_path / "hard-other.bin"
    os.link(folder.other_data, hard)
    for path, what in [
        (folder.other_data, "external data of other.onnx, another model"),
        (folder.other_companion, "companion of other.onnx, another model"),
        (hard, "external data of other.onnx, another model"),
    ]:
        with pytest.raises(nj.OutputPathError, match=what):
            guard_output(path, overwrite=True)  # no model read at all: still refused


def test_another_model_file_is_replaced_only_by_a_model_with_overwrite(folder: Folder) -> None:
    with pytest.raises(nj.OutputPathError, match="another ONNX model: pass overwrite=True"):
        guard_output(folder.other, writes_model=True)
    assert guard_output(folder.other, overwrite=True, writes_model=True) == folder.other
    with pytest.raises(nj.OutputPathError, match="only a model may replace"):
        guard_output(folder.other, overwrite=True)  # a trace, a report, an engine
    with pytest.raises(nj.OutputPathError, match="only a model may replace"):
        guard_output(folder.other, earlier=lambda p: True)


def test_an_unrelated_existing_file_needs_overwrite(folder: Folder) -> None:
    with pytest.raises(nj.OutputPathError, match="an existing file: pass overwrite=True"):
        guard_output(folder.unrelated, reading=[folder.model])
    assert guard_output(folder.unrelated, reading=[folder.model], overwrite=True)


def test_an_earlier_output_of_the_writer_is_replaced_without_overwrite(folder: Folder) -> None:
    assert guard_output(folder.unrelated, earlier=lambda p: p.read_text() == "my notes")
    with pytest.raises(nj.OutputPathError):
        guard_output(folder.unrelated, earlier=lambda p: False)
    with pytest.raises(nj.OutputPathError, match="the model being read"):  # never protected
        guard_output(folder.data, reading=[folder.model], earlier=lambda p: True)


def test_fresh_paths_pass(folder: Folder, tmp_path: Path) -> None:
    fresh = tmp_path / "result.onnx"
    assert guard_output(fresh, reading=[folder.model]) == fresh
    relative = Path(os.path.relpath(fresh))
    assert guard_output(relative, reading=[folder.model]) == fresh
    assert protected_because(fresh, [folder.model]) is None


def test_the_guard_writes_nothing(folder: Folder, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    for path in [folder.model, folder.data, folder.companion, folder.other_data, tmp_path / "x"]:
        with contextlib.suppress(nj.OutputPathError):
            guard_output(path, reading=[folder.model])
    assert snapshot(tmp_path) == before
