"""SVG export of what a GraphView shows, generated from the layout in Python (no browser)."""

from __future__ import annotations

from nsdl_jupyter._display import html_text
from nsdl_jupyter.graph._extract import PSEUDO, short_name
from nsdl_jupyter.graph._hierarchy import is_group_ref
from nsdl_jupyter.graph._layout import HEADER, KIND_FRAME, KIND_GROUP, LayoutResult
from nsdl_jupyter.graph._scene import GraphScene

MARGIN = 20.0


def visible_edges(scene: GraphScene, result: LayoutResult) -> list[tuple[int, int, int]]:
    """(source slot, target slot, first edge index) between visible boxes, merged through
    collapsed groups like js/src/graph_view/graph.ts visibleEdges."""
    h = scene.hierarchy
    item_slot: dict[int, int] = {}
    group_slot: dict[int, int] = {}
    for slot, ref in enumerate(result.refs.tolist()):
        if is_group_ref(ref):
            group_slot[~ref] = slot
        else:
            item_slot[ref] = slot

    def rep(item: int) -> int:
        if item in item_slot:
            return item_slot[item]
        g = h.item_group[item]
        while g >= 0:
            slot = group_slot.get(g)
            if slot is not None:
                return slot if result.kinds[slot] == KIND_GROUP else -1
            g = h.groups[g].parent
        return -1

    seen: dict[tuple[int, int], int] = {}
    for k, edge in enumerate(scene.table.edges):
        a, b = rep(edge.src), rep(edge.dst)
        if a >= 0 and b >= 0 and a != b and (a, b) not in seen:
            seen[(a, b)] = k
    return [(a, b, k) for (a, b), k in seen.items()]


def scene_svg(scene: GraphScene, *, background: str | None = "#ffffff", grid: bool = False) -> str:
    result = scene.layout()
    rects = result.rects
    x0 = float(rects[:, 0].min()) if len(rects) else 0.0
    y0 = float(rects[:, 1].min()) if len(rects) else 0.0
    width = (float((rects[:, 0] + rects[:, 2]).max()) - x0 if len(rects) else 1.0) + 2 * MARGIN
    height = (float((rects[:, 1] + rects[:, 3]).max()) - y0 if len(rects) else 1.0) + 2 * MARGIN
    dx, dy = MARGIN - x0, MARGIN - y0
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="system-ui, sans-serif">'
    ]
    if background:
        out.append(f'<rect width="100%" height="100%" fill="{html_text(background)}"/>')
    if grid:
        out.append(
            '<defs><pattern id="grid" width="40" height="40" patternUnits="userSpaceOnUse">'
            '<path d="M 40 0 L 0 0 0 40" fill="none" stroke="#64748b" stroke-opacity="0.15"/>'
            '</pattern></defs><rect width="100%" height="100%" fill="url(#grid)"/>'
        )
    table, h = scene.table, scene.hierarchy
    out.append(f'<g transform="translate({dx:.1f},{dy:.1f})">')
    for slot, (ref, kind) in enumerate(
        zip(result.refs.tolist(), result.kinds.tolist(), strict=True)
    ):
        if kind != KIND_FRAME:
            continue
        x, y, w, hh = (float(v) for v in rects[slot])
        group = h.groups[~ref]
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{hh:.1f}" rx="8" '
            'fill="#6366f1" fill-opacity="0.05" stroke="#4f46e5" stroke-opacity="0.35"/>'
            f'<text x="{x + 6:.1f}" y="{y + HEADER / 2 + 4:.1f}" font-size="12" font-weight="600" '
            f'fill="#3730a3">{html_text(group.label)} ({group.size})</text>'
        )
    lr = scene.direction == "LR"
    paths = []
    for a, b, k in visible_edges(scene, result):
        ax, ay, aw, ah = (float(v) for v in rects[a])
        bx, by, bw, bh = (float(v) for v in rects[b])
        if lr:
            x1, y1, x2, y2 = ax + aw, ay + ah / 2, bx, by + bh / 2
            d = max(24.0, abs(x2 - x1) / 2)
            curve = (
                f"M{x1:.1f},{y1:.1f} C{x1 + d:.1f},{y1:.1f} {x2 - d:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
            )
        else:
            x1, y1, x2, y2 = ax + aw / 2, ay + ah, bx + bw / 2, by
            d = max(24.0, abs(y2 - y1) / 2)
            curve = (
                f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + d:.1f} {x2:.1f},{y2 - d:.1f} {x2:.1f},{y2:.1f}"
            )
        tensor = table.tensors[table.edges[k].tensor]
        paths.append(
            f'<path d="{curve}"><title>{html_text(tensor.name)} {html_text(tensor.dtype)} '
            f"{html_text(tensor.shape)}</title></path>"
        )
    out.append('<g fill="none" stroke="#94a3b8" stroke-width="1.2">' + "".join(paths) + "</g>")
    for slot, (ref, kind) in enumerate(
        zip(result.refs.tolist(), result.kinds.tolist(), strict=True)
    ):
        if kind == KIND_FRAME:
            continue
        x, y, w, hh = (float(v) for v in rects[slot])
        if kind == KIND_GROUP:
            group = h.groups[~ref]
            title, sub, fill, stroke = (
                f"+ {group.label}",
                f"{group.size} nodes",
                "#eef2ff",
                "#4f46e5",
            )
        else:
            item = table.items[ref]
            pseudo = bool(item.flags & PSEUDO)
            title = item.name if pseudo else item.op
            sub = item.op if pseudo else short_name(item.name)
            fill, stroke = ("#f1f5f9" if pseudo else "#ede9fe"), "#64748b"
        out.append(
            f'<g><title>{html_text(title)}</title><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
            f'height="{hh:.1f}" rx="6" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x + 8:.1f}" y="{y + hh / 2 - 3:.1f}" font-size="12" font-weight="600" '
            f'fill="#1f2328">{html_text(title[:24])}</text>'
            f'<text x="{x + 8:.1f}" y="{y + hh / 2 + 11:.1f}" font-size="11" fill="#57606a">'
            f"{html_text(sub[:26])}</text></g>"
        )
    out.append("</g></svg>")
    return "\n".join(out)
