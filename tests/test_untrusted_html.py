"""Untrusted names and widget state never become markup (issue 9, items 6 and 9).

A model whose names are `<img onerror>`, `</script>`, quotes and bidi overrides is opened in
every widget; every string the browser parses as HTML (HTML widget values, the static
pictures, the SVG export, the report's HTML) is scanned. Crafted widget state goes through
`nsdl html` as a real process. A notebook executed by a real kernel with the model in the
home folder is saved and exported, and carries no home path.
"""

from __future__ import annotations

import html
import json
import os
import platform
import re
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import nbformat
import onnx
import pytest
from ipywidgets.widgets.widget import _instances

import nsdl_jupyter as nj
from nsdl_jupyter._display import html_text, neutralize, shown_path
from nsdl_jupyter._static_export import replace_widget_outputs
from nsdl_jupyter._static_export._widget_html import WIDGET_STATE, WIDGET_VIEW
from nsdl_jupyter.graph._svg import scene_svg
from tests._hostile_models import HOSTILE, IMG, RLO, SCRIPT, hostile_model, raw_markers
from tests._kernels import execute_notebook

BIN = Path(sys.executable).parent


# ---------------------------------------------------------------------- the one helper
def test_every_invisible_or_bidi_character_is_written_out() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cf", "Cc", "Cs", "Zl", "Zp")
        and chr(code) not in "\t\n\r"
        and neutralize(chr(code)) == chr(code)
    ]
    assert missed == [], f"shown raw: {missed[:20]}"
    assert neutralize(RLO) == "evil\\u202egnp.onnx"
    assert neutralize("\U000e0041") == "\\U000e0041"  # a tag character
    assert neutralize("résumé 名前 \t\n") == "résumé 名前 \t\n"  # visible text stays


def test_html_text_escapes_for_text_and_quoted_attributes() -> None:
    for name in HOSTILE:
        shown = html_text(name)
        assert raw_markers(shown) == [] and not re.search(r"[<>\"']", shown)
    assert html_text(IMG) == "&lt;img src=x onerror=alert(1)&gt;"


def test_shown_path_hides_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / "someone"
    work = home / "project"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert shown_path(home / "models" / "m.onnx") == "~/models/m.onnx"
    assert shown_path(work / "runs" / "t.json") == "runs/t.json"
    assert shown_path(work) == "."
    assert shown_path("/opt/data/m.onnx") == "/opt/data/m.onnx"
    assert shown_path("rel/m.onnx") == "rel/m.onnx"


# ---------------------------------------------------------------------- every widget
def _markup_of(widget_ids: set[str]) -> dict[str, str]:
    """Every string of the widgets created since `widget_ids` that a browser parses as HTML."""
    found: dict[str, str] = {}
    for model_id, widget in list(_instances.items()):
        if model_id in widget_ids:
            continue
        label = f"{type(widget).__name__} {model_id[:6]}"
        if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
            found[f"{label} value"] = widget.value
        if getattr(widget, "description_allow_html", False):
            found[f"{label} description"] = widget.description
        static = getattr(widget, "_static_html", "")
        if static:
            found[f"{label} picture"] = static
        labels = getattr(widget, "_options_labels", ())
        if labels:  # drawn as text: markup is harmless there, a bidi override is not
            found[f"{label} options"] = "".join(labels).replace("<", "").replace("'", "")
    return found


@pytest.fixture
def hostile_doc(tmp_path: Path) -> Any:
    path = tmp_path / "hostile.onnx"
    onnx.save(hostile_model(), str(path))
    return nj.open_model(path)


def test_no_widget_shows_a_hostile_name_as_markup(hostile_doc: Any, tmp_path: Path) -> None:
    doc = hostile_doc
    names = list(doc.nodes)
    before = set(_instances)
    report = nj.profile_ort(doc, iterations=2, warmup=0, trace_path=tmp_path / "t.json")
    designer = nj.Designer(doc)
    designer.graph.selected = names
    designer.graph.set_marks(dict.fromkeys(names, "error"))
    designer.graph.set_overlay({n: float(i) for i, n in enumerate(names)}, label=IMG)
    pv = nj.ProfileView(report, graph_view=designer.graph)
    pv.selected = str(report.layers["name"].iloc[0])
    panel = nj.ActivityPanel(doc)
    top_level = [designer, pv, panel, nj.TypeCheckPanel(doc), nj.LayerPalette(doc)]
    for name in names:  # each tool window draws the selected node's name
        designer.graph.selected = [name]
        pictures = {f"picture {type(w).__name__}": w._repr_mimebundle_()["text/html"]
                    for w in top_level}  # fmt: skip
        markup = {**_markup_of(before), **pictures}
        leaks = {where: raw_markers(text) for where, text in markup.items() if raw_markers(text)}
        assert leaks == {}, f"unescaped with {name!r} selected: {leaks}"
    markup["report"] = report._repr_html_()
    markup["svg export"] = scene_svg(designer.graph._scene)
    assert {k: raw_markers(v) for k, v in markup.items() if raw_markers(v)} == {}
    page = "".join(markup.values())
    # the names are there, escaped and made visible: the scan above looked at real text
    for shown in (html_text(IMG), html_text(SCRIPT), "evil\\u202egnp.onnx"):
        assert shown in page, shown
    onnx.checker.check_model(onnx.load(tmp_path / "hostile.onnx"))
    svg = tmp_path / "graph.svg"
    designer.graph.export_image(svg).result(5)
    from xml.etree import ElementTree

    titles = [
        e.text or "" for e in ElementTree.parse(svg).iter("{http://www.w3.org/2000/svg}title")
    ]
    assert any(SCRIPT in t for t in titles)  # well-formed XML, the name read back as text


# ---------------------------------------------------------------------- crafted widget state
def _entry(name: str, **state: Any) -> dict[str, Any]:
    return {"model_name": name, "model_module": "@jupyter-widgets/controls",
            "state": {"_model_name": name, **state}}  # fmt: skip


def _crafted_notebook(folder: Path) -> Path:
    """A few KB of widget state: boxes that list the next box 20 times, 12 levels deep
    (20**12 draws if drawn naively), broken entries, and one good hostile Label."""
    state: dict[str, Any] = {}
    for level in range(12):
        child = f"IPY_MODEL_b{level + 1}" if level < 11 else "IPY_MODEL_leaf"
        state[f"b{level}"] = _entry("VBoxModel", children=[child] * 20)
    state["leaf"] = _entry("HTMLModel", value="<i>leaf</i>")
    state["good"] = _entry("LabelModel", value=IMG + RLO + SCRIPT)
    state["badbuf"] = {**_entry("ImageModel"), "buffers": [{"path": ["value"], "data": "!!"}]}
    state["deep"] = {**_entry("ImageModel"), "buffers": [{"path": [0] * 1100, "data": ""}]}
    state["odd"] = _entry("OutputModel", outputs=[{"output_type": "error", "traceback": 7}])
    state["rows"] = _entry("SelectModel", rows="many", _options_labels=["a"], index=0)
    state["notadict"] = ["junk"]
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": state, "version_major": 2}}
    for model_id in ("b0", "badbuf", "deep", "odd", "rows", "notadict", "good"):
        view = {"version_major": 2, "version_minor": 0, "model_id": model_id}
        output = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: view})
        nb.cells.append(nbformat.v4.new_code_cell(outputs=[output]))
    path = folder / "crafted.ipynb"
    path.write_text(json.dumps(nb, separators=(",", ":")))  # compact: it is a few KB
    assert path.stat().st_size < 12_000
    return path


def test_crafted_widget_state_neither_hangs_nor_aborts_nsdl_html(tmp_path: Path) -> None:
    notebook = _crafted_notebook(tmp_path)
    start = time.monotonic()
    run = subprocess.run(
        [str(BIN / "nsdl"), "html", str(notebook), "-o", str(tmp_path / "out.html")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert time.monotonic() - start < 60
    page = (tmp_path / "out.html").read_text()
    # the good widget is drawn, after the bad ones
    assert f"<span>{html_text(IMG + RLO + SCRIPT)}</span>" in page
    # state still needed by the kept outputs travels as JSON data, inert (nbconvert escapes "/")
    kept_state = re.compile(rf'<script type="{re.escape(WIDGET_STATE)}">.*?</script>', re.S)
    assert len(kept_state.findall(page)) == 1
    assert raw_markers(kept_state.sub("", page)) == [] and SCRIPT not in page
    assert "(this widget could not be drawn)" in page  # the broken ones say so, in place
    assert len(page) < 60 * 2**20


def test_one_bad_entry_costs_only_its_own_picture() -> None:
    nb = nbformat.read(_crafted_notebook(Path(os.environ.get("TMPDIR", "/tmp"))), as_version=4)
    done = replace_widget_outputs(nb)
    assert done.from_state + done.from_output + done.kept == 7
    good = nb.cells[-1].outputs[0]["data"]["text/html"]
    assert html_text(IMG + RLO + SCRIPT) in good


# ---------------------------------------------------------------------- no home path saved
CELLS = [
    """import os, onnx, nsdl_jupyter as nj
from pathlib import Path
from nsdl_jupyter.examples import small_transformer
model = Path.home() / "models" / "m.onnx"
model.parent.mkdir(parents=True, exist_ok=True)
onnx.save(small_transformer(layers=1), model)
doc = nj.open_model(model)
report = nj.profile_ort(doc, iterations=2, warmup=0,
                        trace_path=Path.home() / "traces" / "t.json")
report""",
    "designer = nj.Designer(doc)\ndesigner",
    "nj.ActivityPanel(doc)",
    "nj.ProfileView(report)",
]


@pytest.mark.slow
def test_saved_notebook_and_export_carry_no_home_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "jdoe-private"
    work = tmp_path / "work"
    home.mkdir(parents=True)
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the kernel inherits it
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}  # fmt: skip
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    execute_notebook(nb, work, timeout=300, store_widget_state=True)
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    saved = work / "saved.ipynb"
    nbformat.write(nb, saved)
    page = nj.export_notebook_html(saved, work / "saved.html").read_text()
    text = saved.read_text()
    for where, content in (("notebook", text), ("page", page)):
        assert str(home) not in content and "jdoe-private" not in content, where
    # shown, not hidden: the model as ~/..., the trace by the name the report keeps
    assert "~/models/m.onnx" in text and "t.json" in text
    assert "on this machine" in html.unescape(page)
    host = platform.node()
    if len(host) >= 6:  # a short host name would match unrelated text
        assert host not in text and host not in page
