"""The first view of real torch exports shows the model's modules (issue "First sight"):
constants, weight aliases and shape arithmetic sit with their consumers and hide with the
Constants toggle, exporter artefacts are gone, and no top level is cut into ranges."""

from __future__ import annotations

import onnx
import onnx_ir as ir
import pytest

from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._extract import CONSTANT
from nsdl_jupyter.graph._hierarchy import is_group_ref
from tests import real_exports


def graph_of(name: str) -> ir.Graph:
    """The export's graph with its weights left stripped: the drawing never reads them."""
    return ir.from_proto(onnx.load(real_exports.FOLDER / f"{name}.onnx")).graph


def top_level(name: str) -> tuple[list[str], GraphScene]:
    """Labels of the boxes the first view shows at the top level, in order (helpers hidden)."""
    scene = GraphScene(graph_of(name))
    h, items = scene.hierarchy, scene.table.items
    shown = [
        h.groups[~ref].label if is_group_ref(ref) else items[ref].name
        for ref in h.groups[0].children
        if is_group_ref(ref) or not items[ref].flags & CONSTANT
    ]
    return shown, scene


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_bert_reads_embeddings_encoder_pooler(exporter: str) -> None:
    shown, scene = top_level(f"bert_base_{exporter}")
    groups = [label for label in shown if label in {"embeddings", "encoder", "pooler"}]
    assert groups == ["embeddings", "encoder", "pooler"]
    assert not any(g.synthetic for g in scene.hierarchy.groups if g.parent == 0)
    assert len(shown) <= 16  # inputs, outputs and the attention-mask arithmetic besides
    assert not [label for label in shown if "Identity" in label or "Constant" in label]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_resnet_reads_conv1_layers_fc_in_order(exporter: str) -> None:
    shown, _ = top_level(f"resnet50_{exporter}")
    layers = [label for label in shown if label.startswith("layer")]
    assert layers == ["layer1", "layer2", "layer3", "layer4"]
    assert len(shown) == 12 and shown[0] == "input" and shown[-1] == "output"


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_gpt2_blocks_in_order_without_artefacts_or_stray_splits(exporter: str) -> None:
    shown, scene = top_level(f"gpt2_{exporter}")
    blocks = [label for label in shown if label.startswith("h.")]
    assert blocks == [f"h.{i}" for i in range(12)]
    labels = {g.label for g in scene.hierarchy.groups}
    assert not [label for label in labels if "_empty_nn_module_stack" in label]
    assert not [label for label in shown if "Split" in label]
    assert not any(g.synthetic for g in scene.hierarchy.groups if g.parent == 0)


def test_weight_aliases_are_helpers_in_their_consumers_scope() -> None:
    scene = GraphScene(graph_of("resnet50_torchscript"))
    items = scene.table.items
    aliases = [it for it in items if it.op == "Identity"]
    assert aliases and all(it.flags & CONSTANT for it in aliases)
    assert all(it.scope for it in aliases)  # torch wrote them unscoped: now beside their Conv
