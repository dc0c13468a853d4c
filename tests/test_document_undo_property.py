"""Property: any sequence of edits (valid or refused), then undo all, gives the original model
back byte for byte; redo all then reproduces the edited model byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import onnx
import onnx_ir as ir
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nsdl_jupyter as nj
from nsdl_jupyter.document import DocumentError
from nsdl_jupyter.examples import small_transformer

Edit = Callable[[nj.ModelDocument], object]


def canonical(doc: nj.ModelDocument) -> bytes:
    """The model and its TensorRT properties (companion state that edits follow)."""
    properties = json.dumps(doc.companion.get("tensorrt"), sort_keys=True).encode()
    return ir.to_proto(doc.model).SerializeToString(deterministic=True) + properties


def pick(doc: nj.ModelDocument, index: int) -> str:
    names = sorted(doc.nodes)
    return names[index % len(names)]


def pick_tensor(doc: nj.ModelDocument, index: int) -> str:
    names = sorted(doc.tensors)
    return names[index % len(names)]


def edits() -> st.SearchStrategy[Edit]:
    i = st.integers(min_value=0, max_value=10_000)
    name = st.text(alphabet="abc_1-", min_size=1, max_size=6)
    literal = st.sampled_from(["1", "[1, 2]", "0.5", "'x'", "[[1, 2], [3, 4]]", "[1,"])
    return st.one_of(
        st.builds(
            lambda n, a, v: lambda d: d.set_attribute(pick(d, n), a, v),
            i,
            st.sampled_from(["axis", "alpha", "epsilon", "perm", "to"]),
            literal,
        ),
        st.builds(
            lambda n, a: lambda d: d.reset_attribute(pick(d, n), a),
            i,
            st.sampled_from(["axis", "epsilon", "perm"]),
        ),
        st.builds(lambda n, t: lambda d: d.add_node("Relu", inputs=[pick_tensor(d, t)]), i, i),
        st.builds(lambda n: lambda d: d.remove_node(pick(d, n)), i),
        st.builds(lambda n, new: lambda d: d.rename_node(pick(d, n), new), i, name),
        st.builds(lambda t, new: lambda d: d.rename_tensor(pick_tensor(d, t), new), i, name),
        st.builds(
            lambda t, n, k: lambda d: d.connect(pick_tensor(d, t), pick(d, n), k % 3, replace=True),
            i,
            i,
            i,
        ),
        st.builds(lambda n, k: lambda d: d.disconnect(pick(d, n), k % 3), i, i),
        st.builds(
            lambda nm: (
                lambda d: d.create_initializer(nm, generate="zeros", dtype="float32", shape=[2])
            ),
            name,
        ),
        st.builds(lambda t: lambda d: d.delete_initializer(pick_tensor(d, t)), i),
        st.builds(lambda t: lambda d: d.set_tensor_type(pick_tensor(d, t), shape=["b", 4]), i),
        st.builds(lambda n, m: lambda d: d.remove_nodes([pick(d, n), pick(d, m)]), i, i),
        st.builds(
            lambda n, p: lambda d: d.tensorrt.set_layer_precision(pick(d, n), p),
            i,
            st.sampled_from(["fp16", "int8", "none", "fp64"]),
        ),
        st.builds(
            lambda t, lo, hi, k: (
                lambda d: d.tensorrt.set_profile(
                    pick_tensor(d, t), [lo, 16], [lo, 16], [hi, 16], profile=k % 3
                )
            ),
            i,
            st.integers(0, 4),
            st.integers(0, 8),
            i,
        ),
    )


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prop") / "t.onnx"
    onnx.save(small_transformer(), str(path))
    return path


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=st.lists(edits(), min_size=1, max_size=25))
def test_random_edits_then_undo_all_restore_the_model(model_path: Path, sequence: list[Edit]):
    doc = nj.open_model(model_path)
    original = canonical(doc)
    applied = 0
    for edit in sequence:
        before = canonical(doc)
        try:
            edit(doc)
        except DocumentError:
            assert canonical(doc) == before, "a refused edit changed the model"
            continue
        applied += 1
    edited = canonical(doc)
    steps = 0
    while doc.undo():
        steps += 1
    assert canonical(doc) == original
    assert not doc.dirty
    assert steps <= applied
    while doc.redo():
        pass
    assert canonical(doc) == edited
