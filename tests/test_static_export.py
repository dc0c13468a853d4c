"""Static HTML exports show our widgets' last state with no widget JavaScript.

Real kernels (nbclient, `jupyter nbconvert`, `nsdl html` as processes), real onnxruntime
profiles, the example notebooks; the offline rendering in Chromium is in
tests/ui/test_static_export_ui.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import onnx
import onnx_ir as ir
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter._static_export import refresh_static_picture, replace_widget_outputs
from nsdl_jupyter._static_export._widget_html import WIDGET_STATE, WIDGET_VIEW, saved_states
from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._extract import CONSTANT
from nsdl_jupyter.nbconvert import NotebookExportError, export_notebook_html
from tests._kernels import execute_notebook

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "example_notebooks"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
BIN = Path(sys.executable).parent
PLOTLYJS_BANNER = re.compile(r"\*\s*plotly\.js v\d")

# A GraphView, a ProfileView bound to it and a Designer; later cells change all three, so the
# last state differs from what each showed when displayed.
CELLS = [
    """import onnx, nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
onnx.save(small_transformer(layers=1), "model.onnx")
doc = nj.open_model("model.onnx")
report = nj.profile_ort(doc, iterations=3, warmup=1, trace_path="trace.json")
SOFTMAX = next(n for n, node in doc.nodes.items() if node.op_type == "Softmax")""",
    "view = nj.GraphView(doc, height=400)\nview",
    "pv = nj.ProfileView(report, graph_view=view)\npv",
    "pv.sort_by = 'name'\npv.selected = SOFTMAX\nprint(view.selected)",
    "designer = nj.Designer(doc, height=420)\ndesigner",
    """designer.graph.selected = [SOFTMAX]
doc.set_attribute(SOFTMAX, "axis", -1)
doc.rename_node(SOFTMAX, "attention_probs")
view.set_marks({"attention_probs": "warning"})""",
]


def _notebook(cells: list[str]) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return nb


def _widget_outputs(nb: Any) -> list[dict[str, Any]]:
    return [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if WIDGET_VIEW in output.get("data", {})
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return env


@pytest.fixture(scope="session")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The notebook above, executed by nbclient (widget state saved, as `--execute` does).

    Once per worker for the whole session: a module-scoped one is torn down whenever the
    worker's next test is another module's, and built again (~10 s) when one of these comes
    back to it, as under xdist when the tests of this module are not kept together."""
    folder = tmp_path_factory.mktemp("static_export")
    nb = _notebook(CELLS)
    execute_notebook(nb, folder, timeout=300)
    outputs = [o for cell in nb.cells for o in cell.outputs]
    errors = [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert not errors, errors
    path = folder / "widgets.ipynb"
    nbformat.write(nb, path)
    return path


# ---------------------------------------------------------------------- in the kernel process
@pytest.fixture
def doc(tmp_path: Path) -> Any:
    onnx.save(small_transformer(layers=1), tmp_path / "model.onnx")
    return nj.open_model(tmp_path / "model.onnx")


def test_graph_view_bundle_carries_an_svg_picture_of_the_view(doc: Any) -> None:
    view = nj.GraphView(doc)
    data, _metadata = view._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"] == view.model_id  # the live view stays first
    picture = data["text/html"]
    assert "<script" not in picture  # nothing selected: not even the scroll-into-view script
    names = set(re.findall(r'<g data-name="([^"]+)"', picture))
    # a small model: everything drawn, named (constants, weight aliases and shape arithmetic
    # are hidden, as in the canvas)
    helpers = {it.name for it in view._scene.table.items if it.flags & CONSTANT}
    assert {n for n, node in doc.nodes.items() if node.op_type in ("Constant", "Shape")} <= helpers
    shown = set(doc.nodes) - helpers
    assert shown | {v.name for v in doc.graph.inputs} <= names
    assert not names & helpers
    assert picture.count("<svg") == 1 and 'class="nsdl-selected"' not in picture
    # the picture travels in the widget state, so a saved notebook carries it
    in_state = view.get_state()["_static_html"]
    assert in_state and in_state in picture


def test_picture_shows_selection_overlay_and_marks(doc: Any) -> None:
    view = nj.GraphView(doc)
    softmax = next(n for n, node in doc.nodes.items() if node.op_type == "Softmax")
    view.selected = [softmax]
    names = [n for n, node in doc.nodes.items() if node.op_type != "Constant"]
    view.set_overlay({name: float(i) for i, name in enumerate(names)}, label="node index")
    view.set_marks({softmax: "error"})
    picture = view._repr_mimebundle_()[0]["text/html"]
    assert picture.count('class="nsdl-selected"') == 1
    assert f"selected: {softmax}" in picture
    assert "node index" in picture and "linear-gradient" in picture  # the legend
    assert picture.count('class="nsdl-mark-error"') == 1
    first, last = names[0], names[-1]
    fills = dict(
        re.findall(r'<g data-name="([^"]+)"><title>[^<]*</title><rect [^>]*fill="([^"]+)"', picture)
    )
    assert fills[first] == "rgb(68,1,84)" and fills[last] == "rgb(253,231,37)"  # viridis ends
    view.clear_overlay()
    view.set_marks({})
    plain = view._repr_mimebundle_()[0]["text/html"]
    assert "rgb(68,1,84)" not in plain and "nsdl-mark" not in plain


def test_picture_is_redrawn_only_after_a_change(doc: Any) -> None:
    view = nj.GraphView(doc)
    refresh_static_picture(view)
    before = view._static_html
    sent: list[Any] = []
    view.observe(lambda change: sent.append(change["new"]), names="_static_html")
    refresh_static_picture(view)
    assert sent == []  # nothing changed: no redraw, nothing sent to the browser
    view.selected = [next(iter(doc.nodes))]
    doc.rename_node(next(iter(doc.nodes)), "renamed_first")
    refresh_static_picture(view)
    assert len(sent) == 1 and sent[0] != before
    assert 'data-name="renamed_first"' in view._static_html


def test_profile_view_and_designer_bundles_carry_pictures(doc: Any, tmp_path: Path) -> None:
    report = nj.profile_ort(doc, iterations=2, warmup=0, trace_path=tmp_path / "t.json")
    graph = nj.GraphView(doc)
    pv = nj.ProfileView(report, graph_view=graph)
    pv.selected = str(report.layers["name"].iloc[0])
    data = pv._repr_mimebundle_()
    picture = data["text/html"]
    assert data[WIDGET_VIEW]["model_id"] == pv.model_id
    assert picture.count('class="nsdl-static-plotly"') == 4  # timeline + three chart tabs
    assert "nsdl-profile-table" in picture and "<select" in picture
    assert f"<td style='text-align:left'>{pv.selected}</td>" in picture  # details of the row
    # the live FigureWidget's current figure, with the selected layer's bar outlined
    widths = [w.split(",") for w in re.findall(r'"width":\[([0-9,]+)\]', picture)]
    assert sum(w.count("3") for w in widths) == 1
    designer = nj.Designer(doc)
    picture = designer._repr_mimebundle_()["text/html"]
    assert "nsdl-designer" in picture and "nsdl-static-graph-svg" in picture
    for label in ("Save as", "Undo", "Palette", "Parameters"):
        assert label in picture


def test_tool_windows_and_activity_panel_bundles_carry_pictures(doc: Any) -> None:
    for window in (
        nj.ParameterEditor(doc),
        nj.InitializerEditor(doc),
        nj.LayerExplorer(doc),
        nj.LayerPalette(doc),
        nj.TypeCheckPanel(doc),
        nj.ActivityPanel(doc),
    ):
        data = window._repr_mimebundle_()
        assert data[WIDGET_VIEW]["model_id"] == window.model_id
        assert "<" in data["text/html"], type(window).__name__
        window.close()


# ---------------------------------------------------------------------- executed notebooks
@pytest.mark.slow
def test_saved_widget_state_holds_the_last_picture(executed: Path) -> None:
    nb = nbformat.read(executed, as_version=4)
    states = saved_states(nb.metadata)
    graph_id = _widget_outputs(nb)[0]["data"][WIDGET_VIEW]["model_id"]
    last = states[graph_id]["_static_html"]
    # renamed and marked in the last cell, after the view was displayed
    assert 'data-name="attention_probs"' in last and "nsdl-mark-warning" in last
    assert "selected: attention_probs" in last
    shown_then = _widget_outputs(nb)[0]["data"]["text/html"]
    assert 'data-name="attention_probs"' not in shown_then and "nsdl-selected" not in shown_then


@pytest.mark.slow
def test_export_draws_every_widget_from_its_last_state(executed: Path, tmp_path: Path) -> None:
    nb = nbformat.read(executed, as_version=4)
    widget_count = len(_widget_outputs(nb))
    done = replace_widget_outputs(copy.deepcopy(nb))
    assert (done.from_state, done.from_output, done.kept) == (widget_count, 0, 0)
    assert done.plotly_inlined

    page = export_notebook_html(executed, tmp_path / "page.html").read_text()
    assert WIDGET_VIEW not in page and WIDGET_STATE not in page  # no widget manager at all
    assert "html-manager" not in page and "embed-amd" not in page
    assert len(PLOTLYJS_BANNER.findall(page)) == 1  # plotly.js inlined once
    # GraphView alone and inside the Designer, both as of the last cell
    assert page.count('class="nsdl-static-graph-svg"') == 2
    assert page.count('data-name="attention_probs"') == 2
    # ProfileView: timeline + charts as plotly divs, the table, the selected row's details
    assert page.count('class="nsdl-static-plotly"') == 4
    assert "nsdl-profile-table" in page and "ONNX nodes" in page
    # Designer: the parameters of the node selected last (a Softmax, axis set to -1)
    assert "Softmax" in page and "Save as" in page and 'value="-1"' in page
    # every button says something: icon-only toolbar buttons carry a glyph, not a blank square
    buttons = re.findall(r"<button[^>]*>(.*?)</button>", page, re.S)
    assert buttons and all(re.sub(r"<[^>]+>", "", b).strip() for b in buttons)
    assert "\u21b6" in page  # the Designer's Undo


@pytest.mark.slow
def test_without_saved_state_the_display_time_picture_stands_in(
    executed: Path, tmp_path: Path
) -> None:
    nb = nbformat.read(executed, as_version=4)
    del nb.metadata["widgets"]  # what JupyterLab saves by default
    done = replace_widget_outputs(copy.deepcopy(nb))
    assert (done.from_state, done.from_output, done.kept) == (0, len(_widget_outputs(nb)), 0)
    # plain nbconvert (no preprocessor) already prefers the picture when there is no state
    from nbconvert import HTMLExporter

    plain, _ = HTMLExporter().from_notebook_node(nb)
    assert plain.count('class="nsdl-static-graph-svg"') == 2
    assert 'data-name="attention_probs"' not in plain  # pictures of display time, not last
    nb_with_state = nbformat.read(executed, as_version=4)
    plain_with_state, _ = HTMLExporter().from_notebook_node(nb_with_state)
    assert WIDGET_STATE in plain_with_state  # why the preprocessor exists: CDN widgets


def test_unknown_widget_without_picture_is_left_alone() -> None:
    nb = nbformat.v4.new_notebook()
    view = {"version_major": 2, "version_minor": 0, "model_id": "abc"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            outputs=[nbformat.v4.new_output("display_data", data={WIDGET_VIEW: view})]
        )
    ]
    nb.metadata["widgets"] = {
        WIDGET_STATE: {
            "state": {"abc": {"model_name": "MapModel", "state": {"_model_name": "MapModel"}}}
        }
    }
    done = replace_widget_outputs(nb)
    assert (done.from_state, done.from_output, done.kept) == (0, 0, 1)
    assert WIDGET_VIEW in nb.cells[0].outputs[0]["data"]
    assert "widgets" in nb.metadata  # still needed by that widget's own manager


def test_saved_state_buffers_and_standard_controls() -> None:
    """Controls drawn from a state as JupyterLab saves it: binary buffers, layouts, secrets."""
    import base64

    png = base64.b64encode(b"\x89PNG fake").decode()
    state = {
        "box": ("VBoxModel", {"children": ["IPY_MODEL_img", "IPY_MODEL_pw", "IPY_MODEL_dd"],
                              "layout": "IPY_MODEL_lay"}),
        "lay": ("LayoutModel", {"width": "50%", "display": "flex"}),
        "img": ("ImageModel", {"format": "png", "value": {}}),
        "pw": ("PasswordModel", {"value": "hunter2", "description": "Password"}),
        "dd": ("DropdownModel", {"_options_labels": ["a  b", "c"], "index": 1,
                                 "description": "<b>x</b>"}),
    }  # fmt: skip
    saved = {
        k: {"model_name": name, "state": {"_model_name": name, **s}}
        for k, (name, s) in state.items()
    }
    saved["img"]["buffers"] = [{"path": ["value"], "encoding": "base64", "data": png}]
    nb = nbformat.v4.new_notebook()
    view = {"version_major": 2, "version_minor": 0, "model_id": "box"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            outputs=[nbformat.v4.new_output("display_data", data={WIDGET_VIEW: view})]
        )
    ]
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": saved}}
    done = replace_widget_outputs(nb)
    html = nb.cells[0].outputs[0]["data"]["text/html"]
    assert done.from_state == 1 and "widgets" not in nb.metadata
    assert f"data:image/png;base64,{png}" in html
    assert "hunter2" not in html  # a password never reaches the page
    assert "width:50%" in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "<option selected>c</option>" in html and "a&nbsp;&nbsp;b" in html


@pytest.mark.slow
def test_jupyter_nbconvert_execute_with_the_preprocessor(tmp_path: Path) -> None:
    """The documented command line: the quickstart executed by nbconvert, widgets as SVG."""
    shutil.copy(EXAMPLES / "quickstart.ipynb", tmp_path / "quickstart.ipynb")
    command = [
        str(BIN / "jupyter"), "nbconvert", "--to", "html", "--execute",
        "--ExecutePreprocessor.enabled=True",
        '--Exporter.preprocessors=["nsdl_jupyter.nbconvert.StaticWidgetsPreprocessor"]',
        str(tmp_path / "quickstart.ipynb"),
    ]  # fmt: skip
    run = subprocess.run(
        command, check=False, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    page = (tmp_path / "quickstart.html").read_text()
    assert WIDGET_VIEW not in page and WIDGET_STATE not in page
    assert page.count('class="nsdl-static-graph-svg"') == 1
    # the last state: all groups expanded, the renamed Softmax selected, no overlay left
    model = small_transformer(layers=4)
    softmax = next(n.name for n in model.graph.node if n.op_type == "Softmax")
    table = GraphScene(nj.ModelDocument(ir.from_proto(model)).graph).table
    helpers = {it.name for it in table.items if it.flags & CONSTANT}  # hidden, as in the canvas
    expected = {n.name for n in model.graph.node} - helpers - {softmax}
    drawn = set(re.findall(r'<g data-name="([^"]+)"', page))
    assert expected | {"attention_probs"} <= drawn and softmax not in drawn
    assert "selected: attention_probs" in page and "nsdl-static-legend" not in page


@pytest.mark.slow
def test_profiling_notebook_export_has_every_figure(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "profiling.ipynb", tmp_path / "profiling.ipynb")
    page = export_notebook_html(tmp_path / "profiling.ipynb", execute=True).read_text()
    assert (tmp_path / "profiling.html").exists()
    assert page.count('class="plotly-graph-div"') >= 4  # timeline, top-N, share, comparison
    assert len(PLOTLYJS_BANNER.findall(page)) == 1
    assert WIDGET_VIEW not in page and WIDGET_STATE not in page
    # the ActivityPanel, drawn as static controls
    assert re.search(r">(<span[^>]*>[^<]*</span> )?Profile</button>", page) and "Iterations" in page


@pytest.mark.slow
def test_nsdl_html_command(
    executed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console script as a process; its refusal of a missing notebook through the same
    `main` in this process (a second child only paid for its start-up again)."""
    from nsdl_jupyter.cli import main

    nsdl = str(BIN / "nsdl")
    out = tmp_path / "out.html"
    run = subprocess.run(
        [nsdl, "html", str(executed), "-o", str(out)], check=False, env=_env(),
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(out)
    assert 'class="nsdl-static-graph-svg"' in out.read_text()
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)
    capsys.readouterr()
    assert main(["html", str(tmp_path / "nope.ipynb")]) == 2
    stderr = capsys.readouterr().err
    assert "no such notebook" in stderr and "nope.ipynb" in stderr


def test_export_errors_come_before_any_file_is_written(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such notebook"):
        export_notebook_html(tmp_path / "missing.ipynb")
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(NotebookExportError, match="not a readable notebook"):
        export_notebook_html(broken)
    with pytest.raises(ValueError, match="overwrite the notebook"):
        export_notebook_html(broken, broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.ipynb"]


def test_exported_page_loads_no_script_from_the_network(tmp_path: Path) -> None:
    """Offline readers get no console errors: no require.js; MathJax only when there is math."""
    remote_script = re.compile(r"<script[^>]*\bsrc=[\"']https?:", re.IGNORECASE)
    for markdown, wanted in (("plain text", 0), ("energy $E = mc^2$", 1)):
        path = tmp_path / "page.ipynb"
        nbformat.write(_notebook(["x = 1"]), path)
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_markdown_cell(markdown))
        nbformat.write(nb, path)
        page = export_notebook_html(path).read_text(encoding="utf-8")
        assert len(remote_script.findall(page)) == wanted, markdown
        assert ("mathjax" in page.lower()) == bool(wanted)
        assert "require.min.js" not in page


@pytest.mark.slow
def test_a_failing_cell_stops_the_export(tmp_path: Path) -> None:
    path = tmp_path / "fails.ipynb"
    nbformat.write(_notebook(["x = 1", "raise RuntimeError('boom in cell')"]), path)
    with pytest.raises(NotebookExportError, match="boom in cell") as error:
        export_notebook_html(path, execute=True, timeout=120)
    assert "execute=True" in str(error.value)
    assert not (tmp_path / "fails.html").exists()
    assert json.loads(path.read_text())["cells"][1]["outputs"] == []  # the notebook untouched


def test_overlay_colours_match_the_canvas_colormap() -> None:
    from nsdl_jupyter.graph._drawing import color_at

    assert color_at("viridis", 0.0) == "rgb(68,1,84)"
    assert color_at("viridis", 1.0) == "rgb(253,231,37)"
    assert color_at("viridis", float("nan")) == "rgb(68,1,84)"
    assert color_at("reds", 0.5) == "rgb(251,106,74)"
    assert color_at("unknown", 0.3) == color_at("viridis", 0.3)


def test_a_huge_open_graph_is_pictured_as_its_overview(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_PICTURE_BOXES open boxes (3,000: ~1.5 MB of SVG) the picture is the default
    overview; lowered here so that a small graph crosses it."""
    from nsdl_jupyter._static_export import _graph_picture
    from nsdl_jupyter.examples import synthetic_dag
    from nsdl_jupyter.graph._layout import KIND_FRAME

    view = nj.GraphView(synthetic_dag(600))  # big enough to start with groups closed
    overview = view._repr_mimebundle_()[0]["text/html"]
    assert "boxes are open" not in overview
    view.expand()
    open_boxes = int((view._scene.layout().kinds != KIND_FRAME).sum())
    monkeypatch.setattr(_graph_picture, "MAX_PICTURE_BOXES", open_boxes - 1)
    positions = dict(view._scene.positions)
    picture = view._repr_mimebundle_()[0]["text/html"]
    assert f"{open_boxes} boxes are open in the view, the picture shows groups closed" in picture
    assert picture.count("<g data-name") == overview.count("<g data-name") < open_boxes
    assert dict(view._scene.positions) == positions  # drawing it moved nothing in the view


@pytest.mark.slow
def test_exporter_by_name_as_nbconvert_finds_it(executed: Path) -> None:
    """`jupyter nbconvert --to nsdl_jupyter.nbconvert.StaticHTMLExporter` resolves the same way."""
    from nbconvert.exporters import get_exporter

    from nsdl_jupyter.nbconvert import StaticHTMLExporter

    exporter = get_exporter("nsdl_jupyter.nbconvert.StaticHTMLExporter")
    assert exporter is StaticHTMLExporter
    page, resources = exporter().from_filename(str(executed))
    assert resources["nsdl_static_widgets"].from_state == len(
        _widget_outputs(nbformat.read(executed, as_version=4))
    )
    assert 'class="nsdl-static-graph-svg"' in page and WIDGET_STATE not in page
