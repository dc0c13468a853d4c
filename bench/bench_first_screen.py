"""How much of the model the first screen shows: whole boxes in view, the smallest label size
and the outline's extent, per real export, with the outline cut into bands (now) and in one
column (before), for the default GraphView (560 px) in JupyterLab at 1280x800 with the file
browser open (its canvas measured there: 846 x 510 px, tests/ui/test_graph_first_screen_ui.py).
"outline only": the first view without the modules it opens when the outline has few boxes
(ConvNeXt's `features`, ViT's `encoder`). "tall view": a GraphView 820 px high (canvas 770 px),
its bands cut for that canvas.

The first view is computed as the canvas computes it (renderer.ts initialView: the whole
drawing when its labels stay legible, else its start at a legible scale, top-down), from the
layout's boxes; no browser. Netron 9.3 shows 15-41 whole boxes on its first screen for these
models, our first screen showed 4-9 before issue 25.

    python bench/bench_first_screen.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import onnx_ir as ir
from _common import emit_json, print_table

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from nsdl_jupyter.graph import GraphScene  # noqa: E402 (needs REPO on sys.path)
from nsdl_jupyter.graph._bands import (  # noqa: E402
    CANVAS_H,
    CANVAS_W,
    LABEL_PX,
    LEGIBLE_PX,
    MARGIN,
    TOP,
)
from nsdl_jupyter.graph._layout import KIND_FRAME, LayoutResult  # noqa: E402
from tests import real_exports  # noqa: E402

MODELS = ("bert_base_torchscript", "bert_base_dynamo", "gpt2_dynamo", "resnet50_torchscript",
          "resnet50_dynamo", "convnext_tiny_torchscript", "convnext_tiny_dynamo",
          "vit_b_16_torchscript", "vit_b_16_dynamo", "efficientnet_b0_torchscript",
          "efficientnet_b0_dynamo", "mobilenet_v3_large_torchscript", "mobilenet_v3_large_dynamo",
          "vit_tiny_hf_torchscript", "vit_tiny_hf_dynamo")  # fmt: skip
TALL_WIDGET = 820
LEGIBLE = LEGIBLE_PX / LABEL_PX


def first_screen(result: LayoutResult, canvas_h: float = CANVAS_H) -> tuple[int, int, float]:
    """(whole boxes on the first screen, boxes drawn, smallest label in px) of a top-down view."""
    rects = result.rects.tolist()
    leaves = [r for r, k in zip(rects, result.kinds.tolist(), strict=True) if k != KIND_FRAME]
    x0 = min(r[0] for r in rects)
    y0 = min(r[1] for r in rects)
    w = max(r[0] + r[2] for r in rects) - x0
    h = max(r[1] + r[3] for r in rects) - y0
    across = (CANVAS_W - 2 * MARGIN) / w
    whole = min(across, (canvas_h - 2 * MARGIN - TOP) / h)
    if whole >= LEGIBLE:
        return len(leaves), len(leaves), min(whole, 1.5) * LABEL_PX
    scale = min(1.0, max(LEGIBLE, across))
    room = CANVAS_W - 2 * MARGIN
    tx = MARGIN + (room - w * scale) / 2 - x0 * scale if w * scale <= room else MARGIN - x0 * scale
    ty = TOP + MARGIN - y0 * scale
    inside = [
        r
        for r in leaves
        if r[0] * scale + tx >= 0
        and (r[0] + r[2]) * scale + tx <= CANVAS_W
        and r[1] * scale + ty >= TOP
        and (r[1] + r[3]) * scale + ty <= canvas_h
    ]
    return len(inside), len(leaves), scale * LABEL_PX


def main() -> None:
    rows = []
    figures: dict[str, dict[str, float]] = {}
    for name in MODELS:
        graph = ir.from_proto(onnx.load(real_exports.FOLDER / f"{name}.onnx")).graph
        scene = GraphScene(graph)
        banded = scene.layout()
        now, drawn, label = first_screen(banded)
        opened = scene.expanded
        scene.expanded = {0} if scene.engine.band_top else opened
        outline, _, label_outline = first_screen(scene.layout())
        tall = GraphScene(graph)
        if tall.set_canvas_height(TALL_WIDGET, widget=True):
            tall.expanded = tall.default_expanded()
        tall_h = TALL_WIDGET - (560 - CANVAS_H)
        tall_now, tall_drawn, tall_label = first_screen(tall.layout(), tall_h)
        scene.expanded = opened
        scene.engine.band_top = False
        column = scene.layout()
        before, _, label_before = first_screen(column)
        figures[name] = {
            "boxes_first_screen": now,
            "boxes_drawn": drawn,
            "label_px": round(label, 1),
            "boxes_first_screen_one_column": before,
            "label_px_one_column": round(label_before, 1),
            "boxes_first_screen_outline_only": outline,
            "label_px_outline_only": round(label_outline, 1),
            "boxes_first_screen_tall": tall_now,
            "label_px_tall": round(tall_label, 1),
        }
        rows.append(
            {
                "model": name,
                "first screen": f"{now} of {drawn} boxes",
                "label px": f"{label:.1f}",
                "extent": f"{banded.width:.0f}x{banded.height:.0f}",
                "one column": f"{before} boxes, {column.width:.0f}x{column.height:.0f}",
                "outline only": f"{outline} boxes, {label_outline:.1f} px",
                "tall view": f"{tall_now} of {tall_drawn}, {tall_label:.1f} px",
            }
        )
    print_table("first screen (default GraphView, JupyterLab 1280x800, file browser open)", rows)
    emit_json("first_screen", {"models": figures})


if __name__ == "__main__":
    main()
