"""Graph extraction, name-scope hierarchy, layout and edit patches (no widget, no browser)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest

from nsdl_jupyter.examples import bert_base, synthetic_dag
from nsdl_jupyter.graph import (
    EditSummary,
    GraphScene,
    NeedsRebuild,
    build_hierarchy,
    build_table,
    decode_columns,
    scope_of,
)
from nsdl_jupyter.graph._extract import (
    CONSTANT,
    FROM_CONSTANT,
    GRAPH_INPUT,
    GRAPH_OUTPUT,
    MAX_SCOPE_DEPTH,
    OPTIONAL_INPUT,
)
from nsdl_jupyter.graph._hierarchy import MAX_CHILDREN
from nsdl_jupyter.graph._layout import KIND_FRAME, KIND_GROUP, KIND_NODE
from nsdl_jupyter.graph._tensor_names import tensor_names


def _model(proto: onnx.ModelProto) -> ir.Model:
    return ir.from_proto(proto)


def _tiny() -> ir.Model:
    """x -> /enc/Conv(W) -> /enc/Relu -> Clip(optional min from Constant) -> y."""
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([1, 3, 8, 8]))
    w = ir.Value(name="W", const_value=ir.tensor(np.ones((3, 3, 1, 1), np.float32), name="W"))
    conv = ir.node("Conv", [x, w], name="/enc/Conv")
    relu = ir.node("Relu", conv.outputs, name="/enc/Relu")
    const = ir.node("Constant", [], attributes={"value": ir.tensor(np.float32(0))}, name="Const")
    clip = ir.node("Clip", [relu.outputs[0], const.outputs[0]], name="Clip")
    for node in (conv, relu, const, clip):
        node.outputs[0].name = f"{node.name}_out"
    graph = ir.Graph([x], clip.outputs, nodes=[conv, relu, const, clip], initializers=[w],
                     opset_imports={"": 21}, name="tiny")  # fmt: skip
    return ir.Model(graph, ir_version=10)


def test_extract_items_edges_initializers_constants_and_optional_inputs() -> None:
    table = build_table(_tiny().graph).table
    by = {it.key: i for i, it in enumerate(table.items)}
    assert table.items[by["input:x"]].flags & GRAPH_INPUT
    assert table.items[by["output:Clip_out"]].flags & GRAPH_OUTPUT
    assert table.items[by["Const"]].flags & CONSTANT
    # the initializer W is a stub of Conv (input slot 1), not an edge
    assert [
        (table.items[i].name, table.tensors[t].name, s) for i, t, s in table.initializer_inputs
    ] == [("/enc/Conv", "W", 1)]
    edges = {(table.items[e.src].key, table.items[e.dst].key): e for e in table.edges}
    assert set(edges) == {
        ("input:x", "/enc/Conv"),
        ("/enc/Conv", "/enc/Relu"),
        ("/enc/Relu", "Clip"),
        ("Const", "Clip"),
        ("Clip", "output:Clip_out"),
    }
    assert edges[("Const", "Clip")].flags & OPTIONAL_INPUT  # Clip's min is optional
    assert not edges[("/enc/Relu", "Clip")].flags & OPTIONAL_INPUT
    tensor = table.tensors[edges[("input:x", "/enc/Conv")].tensor]
    assert (tensor.name, tensor.dtype, tensor.shape) == ("x", "float", "[1,3,8,8]")


def test_scope_from_names_and_from_torch_metadata() -> None:
    node = ir.node("Add", [], name="/encoder/layer.3/attention/Add")
    assert scope_of(node) == ("encoder", "layer.3", "attention")
    assert scope_of(ir.node("Add", [], name="blk17/Add")) == ("blk17",)
    assert scope_of(ir.node("Add", [], name="node_add_4")) == ()
    dynamo = ir.node("Add", [], name="node_add_413")
    dynamo.metadata_props["pkg.torch.onnx.name_scopes"] = (
        "['', 'encoder', 'encoder.layer.0', 'encoder.layer.0.attention']"
    )
    assert scope_of(dynamo) == ("encoder", "layer.0", "attention")
    other = ir.node("Add", [], name="n1")
    other.metadata_props["namespace"] = "encoder: Encoder/layer.0: Layer"
    assert scope_of(other) == ("encoder", "layer.0")


def test_hierarchy_groups_oversized_levels_so_no_view_is_wider_than_the_limit() -> None:
    flat = _model(synthetic_dag(3000, seed=2, scoped=False))
    table = build_table(flat.graph).table
    h = build_hierarchy(table)
    assert all(len(g.children) <= MAX_CHILDREN for g in h.groups)
    assert any(g.synthetic for g in h.groups)
    # every alive item sits in exactly one group, and sizes add up
    members = Counter(ref for g in h.groups for ref in g.children if ref >= 0)
    assert all(members[i] == 1 for i, it in enumerate(table.items) if it.alive)
    assert h.groups[0].size == len(table.items)


def test_hierarchy_merges_single_child_scopes() -> None:
    table = build_table(_tiny().graph).table
    h = build_hierarchy(table)
    assert [g.key for g in h.groups] == ["", "/enc"]  # /enc holds Conv and Relu


def test_layout_collapsed_by_default_and_boxes_do_not_overlap() -> None:
    scene = GraphScene(_model(synthetic_dag(2000, seed=3)).graph)
    result = scene.layout()
    assert len(result.refs) < 400  # a few hundred boxes, not 2000
    assert (result.kinds == KIND_GROUP).any()
    leaves = result.rects[result.kinds != KIND_FRAME]
    for i in range(len(leaves)):
        x, y, w, h = leaves[i]
        others = np.delete(leaves, i, axis=0)
        overlap = (
            (others[:, 0] < x + w)
            & (x < others[:, 0] + others[:, 2])
            & (others[:, 1] < y + h)
            & (y < others[:, 1] + others[:, 3])
        )
        assert not overlap.any()
    scene.expand_all()
    full = scene.layout()
    assert (full.kinds == KIND_NODE).sum() == len(scene.table.items)


def test_children_sit_inside_their_expanded_group_frame() -> None:
    scene = GraphScene(_model(synthetic_dag(300, seed=4)).graph)
    result = scene.layout()
    rect = result.rect_of()
    h = scene.hierarchy
    for ref, (x, y, w, hh) in rect.items():
        parent = h.groups[~ref].parent if ref < 0 else h.item_group[ref]
        if parent <= 0:
            continue
        px, py, pw, ph = rect[~parent]
        assert px <= x and py <= y and x + w <= px + pw + 1e-3 and y + hh <= py + ph + 1e-3


def test_layout_is_layered_top_to_bottom_by_default_or_left_to_right() -> None:
    scene = GraphScene(_tiny().graph)
    rect = scene.layout().rect_of()
    by = scene.table.by_key
    assert scene.direction == "TB"  # as Netron and Model Explorer draw
    assert rect[by["/enc/Relu"]][1] > rect[by["/enc/Conv"]][1]
    scene.direction = "LR"
    rect = scene.layout().rect_of()
    assert rect[by["/enc/Relu"]][0] > rect[by["/enc/Conv"]][0]


def test_positions_are_kept_and_restored_and_arrange_recomputes() -> None:
    graph = _model(synthetic_dag(500, seed=5)).graph
    positions: dict[str, list[float]] = {}
    scene = GraphScene(graph, positions=positions)
    first = scene.layout()
    assert positions  # unit positions recorded for the companion file
    moved = dict(positions)
    key = next(k for k in moved if not k.startswith("group:"))
    # into another layer: an outline in bands centres each layer, so a new order alone may
    # not move a box there
    moved[key] = [moved[key][0] + 1.5, moved[key][1] + 5]
    restored = GraphScene(graph, positions=dict(moved), collapsed=scene.collapsed_keys)
    again = restored.layout()
    assert not np.array_equal(first.rects, again.rects)  # the stored position was used
    restored.arrange()
    assert np.array_equal(restored.layout().rects, first.rects)


def test_topology_and_layout_buffers_decode() -> None:
    scene = GraphScene(_tiny().graph)
    meta, cols = decode_columns(scene.topology_bytes())
    assert meta["n_items"] == len(cols["item.name"]) == len(scene.table.items)
    assert [meta["ops"][k] for k in cols["item.op"]] == [it.op for it in scene.table.items]
    lmeta, lcols = decode_columns(scene.layout_bytes())
    assert lmeta["topology"] == meta["version"]
    assert len(lcols["ref"]) == len(lcols["x"])
    assert lmeta["show_constants"] is False
    assert scene.table.by_key["Const"] not in lcols["ref"].tolist()  # hidden by default
    scene.show_constants = True
    _, lcols = decode_columns(scene.layout_bytes())
    assert scene.table.by_key["Const"] in lcols["ref"].tolist()


def _lifted_one_edge_at_a_time(scene: GraphScene) -> dict[int, Counter[tuple[int, int]]]:
    """Reference for engine.lifted(): each edge walked up its two group chains."""
    h, items = scene.hierarchy, scene.table.items
    found: dict[int, Counter[tuple[int, int]]] = {}
    for e in scene.table.edges:
        if e.flags & FROM_CONSTANT or h.item_group[e.src] < 0 or h.item_group[e.dst] < 0:
            continue
        assert items[e.src].alive and items[e.dst].alive
        a, b = h.chain(e.src), h.chain(e.dst)
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        ca = ~a[k] if k < len(a) else e.src
        cb = ~b[k] if k < len(b) else e.dst
        if ca != cb:
            found.setdefault(a[k - 1], Counter())[(ca, cb)] += 1
    return found


@pytest.mark.parametrize("size", [0, 3000])
def test_big_graph_columns_and_lifted_edges_match_the_tables(size: int) -> None:
    """The shared-prefix names and the all-edges-at-once lifting, on BERT's TorchScript names
    and on a synthetic graph whose levels are cut into ranges."""
    scene = GraphScene(_model(bert_base() if size == 0 else synthetic_dag(size)).graph)
    _, cols = decode_columns(scene.topology_bytes())
    assert cols["item.name"] == [it.name for it in scene.table.items]
    assert tensor_names(cols) == [t.name for t in scene.table.tensors]
    relative = np.asarray(cols["tensor.relative"], dtype=int)
    assert relative.sum() > len(relative) // 2  # most are sent as tails
    assert cols["group.key"] == [g.key for g in scene.hierarchy.groups]
    assert cols["item.label"] == [scene.texts[i][0] for i in range(len(scene.table.items))]
    expected = _lifted_one_edge_at_a_time(scene)
    lifted = scene.engine.lifted()
    for g in range(len(scene.hierarchy.groups)):
        assert lifted.get(g, Counter()) == expected.get(g, Counter()), g
        # the order of first appearance: igraph's layout depends on the edge order
        assert list(lifted.get(g, Counter())) == list(expected.get(g, Counter())), g
    assert any(len(c) > 1 for c in expected.values())


def test_edit_patch_for_add_rename_remove_without_relayout_of_others() -> None:
    model = _model(synthetic_dag(600, seed=6))
    graph = model.graph
    scene = GraphScene(graph)
    scene.expand_all()
    before = scene.layout().rect_of()
    first = graph.node(0)
    old = first.name
    # rename
    first.name = "renamed"
    rename = EditSummary(changed=frozenset({"renamed"}), renamed=((old, "renamed"),))
    patch = scene.apply_edit(rename, {n.name: n for n in graph})
    index = scene.table.by_key["renamed"]
    caption, weights = scene.texts[index]
    assert patch["items"] == {
        str(index): [
            "renamed",
            first.op_type,
            0,
            scene.hierarchy.item_group[index],
            caption,
            "\n".join(weights),
        ]
    }
    assert caption == f"{first.op_type} renamed"  # the new name is what the box says
    assert not patch["layout"] and patch["edges"] == []
    # add a node after `first` in the root scope
    relu = ir.node("Relu", [first.outputs[0]], name="added_relu")
    graph.append(relu)
    patch = scene.apply_edit(
        EditSummary(added=frozenset({"added_relu"}), edges=True), {n.name: n for n in graph}
    )
    new = scene.table.by_key["added_relu"]
    assert str(new) in patch["items"] and patch["layout"]
    assert [index, new] in [e[:2] for e in patch["edges"]]
    after = scene.layout().rect_of()
    moved = [r for r in before if r in after and before[r] != after[r]]
    assert len(moved) < len(before) // 4  # placed beside its producer, not a relayout
    # remove it again
    graph.remove(relu)
    patch = scene.apply_edit(
        EditSummary(removed=frozenset({"added_relu"}), edges=True), {n.name: n for n in graph}
    )
    assert patch["items"][str(new)][3] == -1
    assert all(new not in (e.src, e.dst) for e in scene.table.edges)


def test_edit_in_a_new_scope_or_of_graph_io_needs_a_rebuild() -> None:
    model = _model(synthetic_dag(100, seed=7))
    scene = GraphScene(model.graph)
    node = ir.node("Relu", [model.graph.node(0).outputs[0]], name="/brand/new/Relu")
    model.graph.append(node)
    with pytest.raises(NeedsRebuild):
        scene.apply_edit(
            EditSummary(added=frozenset({node.name})), {n.name: n for n in model.graph}
        )
    with pytest.raises(NeedsRebuild):
        scene.apply_edit(EditSummary(graph_io=True), {})
    scene.rebuild()
    assert node.name in scene.table.by_key


@pytest.mark.slow
def test_bert_base_groups_by_torch_name_scopes() -> None:
    scene = GraphScene(_model(bert_base()).graph)
    keys = {g.key for g in scene.hierarchy.groups}
    assert any("layer" in k for k in keys), sorted(keys)[:10]
    assert len(scene.layout().refs) < 400


HOSTILE_NAME_SCOPES = [
    repr(["m"] * 200_000),  # parsed fine, but 200k levels: the hierarchy costs depth squared
    "[" * 100_000 + "]" * 100_000,  # nesting
    "['a' * 10**9]",  # an expression, not a literal
    "'" + "x" * 1_000_000 + "'",  # longer than any scope list
    "[" + "9" * 5000 + "]",  # a number int() refuses to read
    "{'a': 1}",
    "['ok', 1]",
    "['unterminated",
]


@pytest.mark.parametrize("value", HOSTILE_NAME_SCOPES, ids=lambda v: v[:16])
def test_crafted_torch_name_scopes_fall_back_to_the_name_hierarchy(value: str) -> None:
    node = ir.node("Add", [], name="/encoder/layer.3/Add")
    node.metadata_props["pkg.torch.onnx.name_scopes"] = value
    assert scope_of(node) == ("encoder", "layer.3")


def test_graph_view_opens_a_model_with_crafted_scopes_and_deep_names(tmp_path: Path) -> None:
    """Once a MemoryError: a 200,000-entry name_scopes list and a 30,000-level node name."""
    import nsdl_jupyter as nj
    from nsdl_jupyter.widgets import GraphView

    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
    scoped = onnx.helper.make_node("Relu", ["x"], ["h"], name="/enc/relu")
    onnx.helper.set_metadata_props(scoped, {"pkg.torch.onnx.name_scopes": HOSTILE_NAME_SCOPES[0]})
    deep = onnx.helper.make_node("Neg", ["h"], ["y"], name="a/" * 30_000 + "neg")
    model = onnx.helper.make_model(onnx.helper.make_graph([scoped, deep], "g", [x], [y]))
    onnx.save(model, tmp_path / "crafted.onnx")
    view = GraphView(nj.open_model(tmp_path / "crafted.onnx"))
    table = view._scene.table
    items = {item.name: item for item in table.items}
    assert items["/enc/relu"].scope == ("enc",)
    assert items["a/" * 30_000 + "neg"].scope == ("a",) * MAX_SCOPE_DEPTH
