"""Browser-side probes of a GraphView drawn in the visible notebook (shared by the UI tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

VIEW = ".jp-NotebookPanel:not(.lm-mod-hidden) .nsdl-graph-view"

Range = tuple[float, float]


def pixels_near_node(channels: tuple[Range, Range, Range], box: tuple[int, int, int, int]) -> str:
    """JS `(name) => count` of canvas pixels whose r, g, b lie strictly inside `channels`, in
    the box (dx, dy, width, height) placed relative to the node's on-screen point; -1 when
    the node is not drawn, 0 when it is scrolled out of the canvas."""
    dx, dy, width, height = box
    (r0, r1), (g0, g1), (b0, b1) = ([_js(lo), _js(hi)] for lo, hi in channels)
    return f"""(name) => {{
  const root = document.querySelector('{VIEW}');
  const at = root.__nsdl.locate(name);
  if (!at) return -1;
  const canvas = root.querySelector('canvas');
  const r = canvas.getBoundingClientRect();
  const dpr = canvas.width / r.width;
  const x0 = (at[0] - r.left - {dx}) * dpr;
  const y0 = (at[1] - r.top - {dy}) * dpr;
  // a node scrolled out of the canvas has no pixels there (clamping would read the edge)
  if (x0 + {width} * dpr <= 0 || y0 + {height} * dpr <= 0) return 0;
  if (x0 >= canvas.width || y0 >= canvas.height) return 0;
  const x = Math.max(0, x0);
  const y = Math.max(0, y0);
  const data = canvas.getContext('2d').getImageData(x, y, {width} * dpr, {height} * dpr).data;
  const inside = (v, lo, hi) => lo < v && v < hi;
  let n = 0;
  for (let i = 0; i < data.length; i += 4)
    if (inside(data[i], {r0}, {r1}) && inside(data[i + 1], {g0}, {g1})
        && inside(data[i + 2], {b0}, {b1})) n++;
  return n;
}}"""


# the k-th view's edge-grey pixels (drawing.json edge.stroke #94a3b8, alone or blended with the
# light title bar: green above red, blue close above green; the title's indigo text has green
# under red) inside the title bar of the open frame of group `key`, 2 px in from its border
EDGE_PIXELS_IN_TITLE_BAR = f"""([k, key]) => {{
  const root = document.querySelectorAll('{VIEW}')[k];
  const [corner, title] = [root.__nsdl.corner(key), root.__nsdl.locate(key)];
  if (!corner || !title) return -1;
  const canvas = root.querySelector('canvas');
  const r = canvas.getBoundingClientRect();
  const dpr = canvas.width / r.width;
  const clamp = (v, hi) => Math.min(Math.max(0, Math.round(v * dpr)), hi);
  const x0 = clamp(corner[0] - r.left + 2, canvas.width);
  const y0 = clamp(corner[1] - r.top + 2, canvas.height);
  const x1 = clamp(2 * title[0] - corner[0] - r.left - 2, canvas.width);
  const y1 = clamp(2 * title[1] - corner[1] - r.top - 2, canvas.height);
  if (x1 <= x0 || y1 <= y0) return 0;
  const data = canvas.getContext('2d').getImageData(x0, y0, x1 - x0, y1 - y0).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {{
    const [red, green, blue] = [data[i], data[i + 1], data[i + 2]];
    if (green - red >= 6 && blue - green <= 35 && red < 225) n++;
  }}
  return n;
}}"""


def _js(number: float) -> str:
    if number in (float("inf"), float("-inf")):
        return "Infinity" if number > 0 else "-Infinity"
    return repr(number)


def graph_api(nb: Any, expression: str, arg: Any = None) -> Any:
    """Evaluate `expression` (a JS function of (api, arg, root)) against the view's test hooks."""
    return nb.page.evaluate(
        f"""([arg]) => {{ const root = document.querySelector('{VIEW}');
            return ({expression})(root.__nsdl, arg, root); }}""",
        [arg],
    )


def view_api(nb: Any, k: int) -> Callable[..., Any]:
    """`graph_api` for the k-th view of the visible notebook (one that shows several):
    `api(expression, arg=None)`."""

    def api(expression: str, arg: Any = None) -> Any:
        return nb.page.evaluate(
            f"""([k, arg]) => {{ const root = document.querySelectorAll('{VIEW}')[k];
                return ({expression})(root.__nsdl, arg, root); }}""",
            [k, arg],
        )

    return api


def each_view(nb: Any, count: int) -> Iterator[tuple[int, Any, Callable[..., Any]]]:
    """The first `count` views of the visible notebook in order, each waited for until drawn
    and scrolled into view: (k, its locator, its `view_api`)."""
    for k in range(count):
        view = nb.page.locator(f'{VIEW}[data-ready="1"]').nth(k)
        view.wait_for(timeout=120_000)
        view.scroll_into_view_if_needed()
        nb.two_frames()
        yield k, view, view_api(nb, k)
