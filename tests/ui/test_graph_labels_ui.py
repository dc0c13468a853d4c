"""What the boxes and edges of a GraphView say, in a real JupyterLab + headless Chromium, on a
model shaped like a Hugging Face BERT export: captions with the meaningful name part, weight
shapes inside the boxes, tensor shapes (from shape inference) on the edges."""

from __future__ import annotations

import re
from typing import Any

import pytest

from nsdl_jupyter.graph import VOCABULARY
from nsdl_jupyter.graph._shapes import TIMES
from tests.ui.graph_probe import graph_api

pytestmark = [pytest.mark.ui, pytest.mark.slow]

VIEW = ".nsdl-graph-view"
READY = '.nsdl-graph-view[data-ready="1"]'
SHAPES = ".nsdl-graph-view[data-shapes]"

# small_transformer renamed as HF exports name it (/bert/encoder/layer.0/attention/self/
# query/MatMul), with torch's unscoped Identity weight aliases in front of every MatMul weight
HF_BERT = """
import tempfile, onnx
from onnx import helper
import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
model = small_transformer(layers=2, hidden=64, heads=4, seq=16)
graph = model.graph
weights = {init.name for init in graph.initializer}
aliases = []
for node in graph.node:
    if node.name.startswith("/"):
        node.name = "/bert" + node.name
    for slot, name in enumerate(node.input):
        if node.op_type == "MatMul" and name in weights:
            alias = f"onnx::MatMul_{len(aliases) + 900}"
            aliases.append(helper.make_node("Identity", [name], [alias],
                                            name=f"Identity_{len(aliases) + 300}"))
            node.input[slot] = alias
nodes = aliases + list(graph.node)
del graph.node[:]
graph.node.extend(nodes)
folder = tempfile.mkdtemp()
onnx.save(model, folder + "/bert.onnx")
doc = nj.open_model(folder + "/bert.onnx")
layer = "/bert/encoder/layer.0/attention/self"
query = layer + "/query/MatMul"
print("ALIASES", len(aliases), "OUT", doc.nodes[query].outputs[0].name)
view = nj.GraphView(doc, height=620)
view
"""


# the first view of a module export is its outline (modules collapsed): open them all, as a
# user reading the inside of the model would
HF_BERT_EXPANDED = HF_BERT.replace("\nview\n", "\nview.expand()\nview\n")


def test_boxes_say_op_and_name_weights_inside_and_edges_their_shape(notebook: Any) -> None:
    nb = notebook([HF_BERT_EXPANDED, "print('DIR', view.direction)"])
    out = nb.run_cell(0)
    assert nb.error_outputs() == []
    aliases = int(out.split("ALIASES", 1)[1].split()[0])
    query_out = out.split("OUT", 1)[1].split()[0]
    assert aliases >= 12  # Q, K, V, output, intermediate and output dense per layer
    nb.wait_for(READY)
    assert "DIR TB" in nb.run_cell(1)  # top-down by default

    layer = "/bert/encoder/layer.0/attention/self"
    query = f"{layer}/query/MatMul"
    x = TIMES
    label = graph_api(nb, "(a, n) => a.label(n)", query)
    assert label == {"caption": "MatMul query", "weights": [f"B⟨64{x}64⟩"]}
    assert graph_api(nb, "(a, n) => a.label(n)", f"{layer}/Softmax")["caption"] == "Softmax"
    # the exporter wrote no value_info: no shape until a view zooms in far enough to draw them
    arrived = graph_api(nb, "(a, n, root) => 'shapes' in root.dataset")
    assert arrived or graph_api(nb, "(a, n) => a.tensor(n)", query_out)["shape"] == ""
    names = [f"{layer}/{part}/MatMul" for part in ("query", "key", "value")]
    graph_api(nb, "(a, names) => a.fit(names)", names)
    nb.wait_for(SHAPES)  # then the kernel runs shape inference once and sends the shapes
    nb.two_frames()
    tensor = graph_api(nb, "(a, n) => a.tensor(n)", query_out)
    # onnx shape inference loses batch_size at the position-embedding Add (its Slice of
    # position_ids has unknown dims), as on real HF exports; onnxruntime's symbolic inference
    # relates it to the input's dim again (graph/_shapes.py)
    assert tensor["dtype"] == "float" and tensor["shape"] == f"batch_size{x}16{x}64", tensor
    scale = graph_api(nb, "(a) => a.camera().scale")
    texts = graph_api(nb, "(a) => a.texts()")
    assert scale >= 0.7, f"fit on three boxes should zoom in enough to read, got {scale}"
    assert {"MatMul query", "MatMul key", "MatMul value", f"B⟨64{x}64⟩"} <= set(texts), texts
    # the shape drawn on the edge leaving a MatMul; where its room ends, dim names are cut
    # with an ellipsis before its numbers (batch_s… then 16 and 64)
    cut = [re.compile(".*".join(map(re.escape, t.split("…")))) for t in texts]
    assert tensor["shape"].endswith(f"{x}16{x}64")
    assert any(c.fullmatch(tensor["shape"]) and c.pattern.endswith("64") for c in cut), texts
    assert not [t for t in texts if t.startswith("MatMul ") and t.endswith("MatMul")]
    assert not [t for t in texts if "Identity" in t]  # weight aliases stay hidden
    nb.screenshot("bert_labels", VIEW)


def test_collapsed_groups_keep_their_titles_when_zoomed_out(notebook: Any) -> None:
    nb = notebook([HF_BERT])
    nb.run_cell(0)
    nb.wait_for(READY)
    seq = nb.page.locator(READY).first.get_attribute("data-layout-seq")
    assert graph_api(nb, "(a) => a.request('collapse_all', {})")["ok"]
    nb.page.wait_for_function(
        "(s) => document.querySelector('.nsdl-graph-view').dataset.layoutSeq !== s", arg=seq
    )
    graph_api(nb, "(a) => a.fit()")
    # zoomed out past the scale where box labels are drawn
    while graph_api(nb, "(a) => a.camera().scale") >= VOCABULARY["label"]["minScale"] / 1.5:
        nb.page.locator(f"{VIEW} .nsdl-gv-zoom-out").first.click()
    nb.two_frames()
    texts = graph_api(nb, "(a) => a.texts()")
    # the collapsed modules, at a fixed size on screen, cut to the box
    ellipsis = VOCABULARY["label"]["ellipsis"]

    def shown(module: str) -> bool:
        return any(
            t == module or (t.endswith(ellipsis) and module.startswith(t[:-1])) for t in texts
        )

    assert all(shown(m) for m in ("embeddings", "encoder", "pooler")), texts
    assert not [t for t in texts if t.startswith(("MatMul", "Softmax"))]
    nb.screenshot("zoomed_out", VIEW)
