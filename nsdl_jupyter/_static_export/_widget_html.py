"""Static HTML of an ipywidgets tree from its state, read from the live widgets or from the
widget state a notebook saves in its metadata: what the last view showed, drawn without a
widget manager. A widget whose state has a non-empty `_static_html` (GraphView) draws as
that; plotly FigureWidgets and plotly outputs become plotly divs (see _plotly_html)."""

from __future__ import annotations

import base64
import binascii
import itertools
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nsdl_jupyter._display import html_text as _e
from nsdl_jupyter._static_export._plotly_html import figure_html

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PLOTLY_JSON = "application/vnd.plotly.v1+json"
STATIC_TRAIT = "_static_html"
REF = "IPY_MODEL_"

logger = logging.getLogger(__name__)

StateLookup = Callable[[str], "Mapping[str, Any] | None"]

# zero specificity (:where): the widgets' own CSS and their inline layout styles always win;
# `pre` is the exception, as nbconvert's page CSS makes it inherit the text font
STYLE = """<style>
:where(.nsdl-static) { font-family: system-ui, -apple-system, "Segoe UI", sans-serif;
  font-size: 13px; color: #1f2328; line-height: 1.35; }
:where(.nsdl-static .nsdl-w-box) { display: flex; box-sizing: border-box; min-width: 0;
  overflow: auto; }
:where(.nsdl-static .nsdl-w-hbox, .nsdl-static .nsdl-w-boxrow) { flex-direction: row; }
:where(.nsdl-static .nsdl-w-vbox) { flex-direction: column; }
:where(.nsdl-static .nsdl-w-control) { display: flex; flex-direction: row;
  align-items: baseline; box-sizing: border-box; margin: 2px; min-height: 28px;
  line-height: 28px; min-width: 0; }
:where(.nsdl-static .nsdl-w-wide) { width: 300px; }
:where(.nsdl-static .nsdl-w-short) { width: 148px; }
:where(.nsdl-static .nsdl-w-wide > input, .nsdl-static .nsdl-w-wide > select,
  .nsdl-static .nsdl-w-wide > textarea, .nsdl-static .nsdl-w-wide > progress) {
  flex: 1 1 150px; min-width: 0; box-sizing: border-box; }
:where(.nsdl-static .nsdl-w-short > button) { width: 100%; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }
:where(.nsdl-static .nsdl-w-html > div, .nsdl-static .nsdl-w-htmlmath > div) { flex: 1 1 auto;
  align-self: stretch; }
:where(.nsdl-static .nsdl-w-desc) { width: 80px; text-align: right; flex: 0 0 auto;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; margin-right: 8px; }
:where(.nsdl-static input, .nsdl-static select, .nsdl-static textarea, .nsdl-static button) {
  font: inherit; font-size: 13px; }
:where(.nsdl-static input[type=text], .nsdl-static input[type=password]) { height: 28px;
  border: 1px solid #d0d7de; padding: 2px 6px; }
:where(.nsdl-static .nsdl-w-dropdown > select) { height: 28px; }
:where(.nsdl-static button) { border: 0; background: #eeeeee; padding: 0 10px; height: 28px;
  margin: 0 4px 0 0; cursor: default; box-shadow: 0 1px 2px rgba(0,0,0,0.15); }
:where(.nsdl-static button:disabled) { opacity: 0.6; }
:where(.nsdl-static button.nsdl-w-pressed) { background: #d0d7de;
  box-shadow: inset 0 1px 3px #8c959f; }
:where(.nsdl-static button.nsdl-w-primary) { background: #2196f3; color: #fff; }
:where(.nsdl-static button.nsdl-w-success) { background: #4caf50; color: #fff; }
:where(.nsdl-static button.nsdl-w-info) { background: #00bcd4; color: #fff; }
:where(.nsdl-static button.nsdl-w-warning) { background: #ff9800; color: #fff; }
:where(.nsdl-static button.nsdl-w-danger) { background: #f44336; color: #fff; }
:where(.nsdl-static .nsdl-w-tabbar) { display: flex; flex-wrap: wrap;
  border-bottom: 1px solid #d0d7de; margin-top: 4px; }
:where(.nsdl-static .nsdl-w-tab) { padding: 0 12px; line-height: 24px; color: #57606a;
  border: 1px solid transparent; cursor: pointer; }
:where(.nsdl-static .nsdl-w-tabs) { display: flex; flex-direction: column; width: 100%; }
:where(.nsdl-static .nsdl-w-tabs > input) { display: none; }
:where(.nsdl-static .nsdl-w-panel) { height: 0; overflow: hidden; visibility: hidden; }
:where(.nsdl-static .nsdl-w-tab-contents) { border: 1px solid #d0d7de; border-top: 0;
  padding: 4px; overflow: auto; }
:where(.nsdl-static .nsdl-w-accordion-title) { padding: 0 8px; background: #f6f8fa;
  border: 1px solid #d0d7de; margin-top: 2px; line-height: 26px; cursor: pointer; }
:where(.nsdl-static pre) { margin: 0; white-space: pre-wrap; line-height: 1.35; }
.nsdl-static pre { font-family: var(--jp-code-font-family, monospace); }
:where(.nsdl-static .nsdl-w-stderr) { background: #ffdddd; }
:where(.nsdl-static .nsdl-static-caption) { color: #57606a; font-size: 12px; margin: 2px 0;
  line-height: 1.35; }
</style>"""

_LAYOUT_KEYS = (
    "display", "visibility", "width", "height", "min_width", "max_width", "min_height",
    "max_height", "flex", "flex_flow", "align_items", "align_content", "align_self",
    "justify_content", "justify_items", "overflow", "margin", "padding", "border_top",
    "border_right", "border_bottom", "border_left", "order", "grid_area",
    "grid_template_columns", "grid_template_rows", "grid_template_areas", "grid_gap",
    "grid_auto_columns", "grid_auto_rows", "grid_auto_flow", "grid_row", "grid_column",
)  # fmt: skip
_BOXES = {"VBoxModel": "vbox", "HBoxModel": "hbox", "BoxModel": "boxrow", "GridBoxModel": "grid"}
_TEXTS = {"TextModel", "ComboboxModel", "IntTextModel", "FloatTextModel", "BoundedIntTextModel",
          "BoundedFloatTextModel", "DatePickerModel", "ColorPickerModel", "TimeModel",
          "DatetimeModel", "NaiveDatetimeModel"}  # fmt: skip
_SLIDERS = {"IntSliderModel", "FloatSliderModel", "FloatLogSliderModel"}
_RANGES = {"IntRangeSliderModel", "FloatRangeSliderModel", "SelectionRangeSliderModel"}
_OPTION_BUTTONS = {"ToggleButtonsModel", "RadioButtonsModel"}
# ipywidgets' default widths: 300px for inputs with a label, 148px for buttons
_WIDE = {*_TEXTS, *_SLIDERS, *_RANGES, "PasswordModel", "TextareaModel", "CheckboxModel",
         "DropdownModel", "SelectModel", "SelectMultipleModel", "IntProgressModel",
         "FloatProgressModel"}  # fmt: skip
_SHORT = {"ButtonModel", "ToggleButtonModel"}
_CONTAINERS = {"TabModel", "AccordionModel", "StackModel", "OutputModel"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAX_DEPTH = 64
# A few KB of state whose boxes list the same child many times would draw exponentially
# many copies: a widget output that needs more than this is not drawn (its stored picture
# stands in), and one renderer (one notebook) draws at most _MAX_TOTAL_DRAWS widgets.
# Characters are counted at every nesting level, so the budget bounds the work.
_MAX_DRAWS = 20_000
_MAX_CHARS = 64 * 2**20
_MAX_TOTAL_DRAWS = 200_000
_MAX_BUFFER_PATH = 64
_BROKEN = '<div class="nsdl-w-broken">(this widget could not be drawn)</div>'
_TAB_GROUPS = itertools.count(1)
_PAGE_SALT = uuid.uuid4().hex[:8]  # radio groups stay apart when outputs share a page
_MAX_TABS = 16


def _tab_css() -> str:
    """The checked radio of a Tab shows its panel and marks its label (up to _MAX_TABS)."""
    rules = []
    for k in range(1, _MAX_TABS + 1):
        checked = f".nsdl-static .nsdl-w-tabs > input:nth-of-type({k}):checked"
        rules.append(
            f"{checked} ~ .nsdl-w-tab-contents > .nsdl-w-panel:nth-child({k}) "
            "{ height: auto; overflow: visible; visibility: visible; }"
        )
        rules.append(
            f"{checked} ~ .nsdl-w-tabbar > .nsdl-w-tab:nth-child({k}) {{ color: #1f2328; "
            "background: #fff; border-color: #d0d7de #d0d7de #fff; border-top: 2px solid "
            "#2196f3; margin-bottom: -1px; }"
        )
    return "\n".join(rules)


STYLE = STYLE.replace("</style>", _tab_css() + "\n</style>")


def model_id_of(reference: object) -> str | None:
    if isinstance(reference, str) and reference.startswith(REF):
        return reference[len(REF) :]
    return None


def saved_states(metadata: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """model_id -> state (binary buffers put back in place) of a notebook's saved widgets."""
    saved = (metadata.get("widgets") or {}).get(WIDGET_STATE) or {}
    states: dict[str, Mapping[str, Any]] = {}
    entries = saved.get("state") if isinstance(saved, Mapping) else None
    for model_id, entry in (entries if isinstance(entries, Mapping) else {}).items():
        try:
            states[str(model_id)] = _saved_state(entry)
        except (TypeError, ValueError, AttributeError, LookupError, binascii.Error) as error:
            # one broken entry costs its own picture, never the export
            logger.warning("widget %s has an unreadable saved state: %s", model_id, error)
    return states


def _saved_state(entry: Any) -> Mapping[str, Any]:
    state = dict(entry.get("state") or {})
    state.setdefault("_model_name", entry.get("model_name", ""))
    for buffer in entry.get("buffers") or []:
        path = list(buffer.get("path") or [])
        data = buffer.get("data", "")
        if isinstance(data, str):  # base64, the protocol's only text encoding
            data = base64.b64decode(data)
        if 0 < len(path) <= _MAX_BUFFER_PATH:
            state = _set_path(state, path, data)
    return state


def _set_path(container: Any, path: Sequence[Any], value: Any) -> Any:
    """A copy of `container` with `value` at `path` (copies only along the path)."""
    head, *rest = path
    if not isinstance(container, (list, Mapping)):
        return container
    copy: Any = list(container) if isinstance(container, list) else dict(container)
    if isinstance(copy, list) and not (isinstance(head, int) and 0 <= head < len(copy)):
        return container
    if isinstance(copy, dict) and rest and head not in copy:
        return container
    copy[head] = value if not rest else _set_path(copy[head], rest, value)
    return copy


def decode_plotly_arrays(value: Any) -> Any:
    """plotly's widget serializer sends arrays as {"dtype", "shape", "buffer"}: numpy again."""
    if isinstance(value, Mapping):
        buffer = value.get("buffer")
        if "dtype" in value and isinstance(buffer, (bytes, bytearray, memoryview)):
            import numpy as np

            array = np.frombuffer(bytes(buffer), dtype=np.dtype(str(value["dtype"])))
            shape = value.get("shape")
            return array.reshape(shape) if shape else array
        return {k: decode_plotly_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_plotly_arrays(v) for v in value]
    return value


def plotly_figure(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The figure of a plotly FigureWidget's state (plotly >= 6: `_widget_data`; 5: `_data`)."""
    for data_key, layout_key in (("_widget_data", "_widget_layout"), ("_data", "_layout")):
        if data_key in state and layout_key in state and "_py2js_restyle" in state:
            return {
                "data": decode_plotly_arrays(state.get(data_key) or []),
                "layout": decode_plotly_arrays(state.get(layout_key) or {}),
            }
    return None


class WidgetHtml:
    """Renders widget models by id through `lookup(model_id) -> state or None`."""

    def __init__(self, lookup: StateLookup) -> None:
        self._lookup = lookup
        self._active: set[str] = set()
        self._draws = 0  # in the current render
        self._chars = 0
        self._total_draws = 0

    @property
    def _over_budget(self) -> bool:
        return (
            self._draws >= _MAX_DRAWS
            or self._chars >= _MAX_CHARS
            or self._total_draws >= _MAX_TOTAL_DRAWS
        )

    def render(self, model_id: str) -> str | None:
        """HTML of the model and its children; None when its state is unknown or it draws
        nothing this renderer knows (an unknown custom widget without `_static_html`)."""
        state = self._lookup(model_id)
        if state is None or not self._known(state):
            return None
        self._draws = self._chars = 0
        drawn = self._model(model_id, 0)
        if self._over_budget:
            logger.warning("widget %s is too big to draw as a static picture", model_id)
            return None
        return f'<div class="nsdl-static">{STYLE}{drawn}</div>'

    def _known(self, state: Mapping[str, Any]) -> bool:
        name = str(state.get("_model_name", ""))
        static = state.get(STATIC_TRAIT)
        if isinstance(static, str) and static:
            return True
        if plotly_figure(state) is not None:
            return True
        return name in _HANDLERS or name in _BOXES or name.endswith("StyleModel")

    # ------------------------------------------------------------------ models
    def _model(self, model_id: str | None, depth: int) -> str:
        if model_id is None or model_id in self._active or depth > _MAX_DEPTH:
            return ""
        state = self._lookup(model_id)
        if state is None or self._over_budget:
            return ""
        self._draws += 1
        self._total_draws += 1
        self._active.add(model_id)
        try:
            drawn = self._draw(state, depth)
        except Exception as error:  # a crafted or foreign state: this widget only
            logger.warning("widget %s could not be drawn: %r", model_id, error)
            drawn = _BROKEN
        finally:
            self._active.discard(model_id)
        self._chars += len(drawn)
        return drawn

    def _draw(self, state: Mapping[str, Any], depth: int) -> str:
        name = str(state.get("_model_name", ""))
        static = state.get(STATIC_TRAIT)
        if isinstance(static, str) and static:
            return self._frame(state, static)
        figure = plotly_figure(state)
        if figure is not None:
            return self._frame(state, figure_html(figure))
        if name in _BOXES:
            kind = _BOXES[name]
            children = "".join(
                self._model(model_id_of(c), depth + 1) for c in state.get("children") or []
            )
            extra = "display:grid" if kind == "grid" else ""
            return self._frame(state, children, f"nsdl-w-box nsdl-w-{kind}", extra)
        handler = _HANDLERS.get(name)
        if handler is None:
            return ""
        kind = f"nsdl-w-{name.removesuffix('Model').lower()}"
        if name in _CONTAINERS:
            classes = f"nsdl-w-box nsdl-w-vbox {kind}"
        else:
            size = "nsdl-w-wide" if name in _WIDE else "nsdl-w-short" if name in _SHORT else ""
            classes = f"nsdl-w-control {size} {kind}"
        return self._frame(state, handler(self, state, depth), classes)

    def _frame(self, state: Mapping[str, Any], inner: str, css: str = "", extra: str = "") -> str:
        classes = " ".join([css, *(str(c) for c in state.get("_dom_classes") or [])]).strip()
        style = ";".join(s for s in (extra, self._layout_css(state)) if s)
        tooltip = state.get("tooltip")
        title = f' title="{_e(tooltip)}"' if tooltip else ""
        return f'<div class="{_e(classes)}" style="{_e(style)}"{title}>{inner}</div>'

    def _layout_css(self, state: Mapping[str, Any]) -> str:
        layout = self._lookup(model_id_of(state.get("layout")) or "") or {}
        rules = []
        for key in _LAYOUT_KEYS:
            value = layout.get(key)
            if value not in (None, ""):
                rules.append(f"{key.replace('_', '-')}:{value}")
        return ";".join(rules)

    def description(self, state: Mapping[str, Any]) -> str:
        text = state.get("description") or ""
        if not text:
            return ""
        label = str(text) if state.get("description_allow_html") else _e(text)
        style = self._lookup(model_id_of(state.get("style")) or "") or {}
        width = style.get("description_width")
        css = f' style="width:{_e(width)}"' if width else ""
        return f'<label class="nsdl-w-desc"{css}>{label}</label>'

    def child(self, reference: object, depth: int) -> str:
        return self._model(model_id_of(reference), depth + 1)

    # ------------------------------------------------------------------ outputs
    def outputs(self, outputs: Sequence[Mapping[str, Any]], depth: int) -> str:
        return "".join(self.output(o, depth) for o in outputs)

    def output(self, output: Mapping[str, Any], depth: int) -> str:
        kind = output.get("output_type")
        if kind == "stream":
            css = "nsdl-w-stderr" if output.get("name") == "stderr" else "nsdl-w-stdout"
            return f'<pre class="{css}">{_e(_text(output.get("text")))}</pre>'
        if kind == "error":
            trace = _ANSI.sub("", "\n".join(output.get("traceback") or []))
            text = trace or f"{output.get('ename')}: {output.get('evalue')}"
            return f'<pre class="nsdl-w-stderr">{_e(text)}</pre>'
        data: Mapping[str, Any] = output.get("data") or {}
        view = data.get(WIDGET_VIEW)
        if isinstance(view, Mapping):
            model_id = str(view.get("model_id", ""))
            state = self._lookup(model_id)
            if state is not None and self._known(state):
                return self._model(model_id, depth + 1)
        for mime, draw in _MIME_ORDER:
            if mime in data:
                return draw(data[mime])
        return ""


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _image(mime: str) -> Callable[[Any], str]:
    def draw(value: Any) -> str:
        return f'<img src="data:{mime};base64,{_e(_text(value).strip())}">'

    return draw


_MIME_ORDER: tuple[tuple[str, Callable[[Any], str]], ...] = (
    ("text/html", _text),
    ("image/svg+xml", _text),
    ("image/png", _image("image/png")),
    ("image/jpeg", _image("image/jpeg")),
    (PLOTLY_JSON, lambda value: figure_html(value) if isinstance(value, Mapping) else ""),
    ("text/markdown", lambda value: f"<pre>{_e(_text(value))}</pre>"),
    ("text/plain", lambda value: f"<pre>{_e(_text(value))}</pre>"),
)


# ---------------------------------------------------------------------- one control each
def _html(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    return r.description(s) + f"<div>{s.get('value') or ''}</div>"


def _label(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    return r.description(s) + f"<span>{_e(s.get('value') or '')}</span>"


def _text_input(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    value = s.get("value")
    placeholder = s.get("placeholder") or ""
    shown = "" if value is None else value
    return r.description(s) + (
        f'<input type="text" readonly value="{_e(shown)}" placeholder="{_e(placeholder)}">'
    )


def _password(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    return r.description(s) + '<input type="password" readonly value="">'  # never the secret


def _textarea(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    rows = int(s.get("rows") or 3)
    return (
        r.description(s) + f'<textarea readonly rows="{rows}">{_e(s.get("value") or "")}</textarea>'
    )


def _checkbox(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    checked = " checked" if s.get("value") else ""
    return (
        f'<label><input type="checkbox" disabled{checked}> {_e(s.get("description") or "")}</label>'
    )


# A static page has no Font Awesome: the icons the package's buttons use, as characters the
# system fonts draw (DejaVu, Segoe UI Symbol); an unknown icon shows its tooltip's first letter.
_ICON_GLYPHS = {
    "save": "\u2913",  # ⤓
    "undo": "\u21b6",  # ↶
    "repeat": "\u21b7",  # ↷ (redo)
    "redo": "\u21b7",
    "sitemap": "\u229e",  # ⊞ (arrange)
    "th": "\u25a6",  # ▦
    "image": "\u25a3",  # ▣
    "play": "\u25b6",  # ▶
    "stop": "\u25a0",  # ■
    "check": "\u2713",  # ✓
    "filter": "\u25bd",  # ▽
    "cogs": "\u2699",  # ⚙
    "key": "\u26bf",  # ⚿
    "plug": "\u26a1",  # ⚡
    "plus": "+",
    "minus": "\u2212",
    "times": "\u00d7",
}


def _icon(s: Mapping[str, Any]) -> str:
    icon = str(s.get("icon") or "")
    if not icon:
        return ""
    glyph = _ICON_GLYPHS.get(icon) or (str(s.get("tooltip") or icon)[:1].upper())
    return f'<span class="nsdl-w-icon" aria-hidden="true">{_e(glyph)}</span>'


def _button(r: WidgetHtml, s: Mapping[str, Any], _d: int, pressed: bool = False) -> str:
    style = s.get("button_style") or ""
    classes = " ".join(
        c for c in (f"nsdl-w-{style}" if style else "", "nsdl-w-pressed" if pressed else "") if c
    )
    disabled = " disabled" if s.get("disabled") else ""
    text = _e(s.get("description") or "")
    label = " ".join(part for part in (_icon(s), text) if part)
    return f'<button type="button" tabindex="-1" class="{classes}"{disabled}>{label}</button>'


def _toggle_button(r: WidgetHtml, s: Mapping[str, Any], d: int) -> str:
    return _button(r, s, d, pressed=bool(s.get("value")))


def _options(s: Mapping[str, Any]) -> tuple[list[str], set[int]]:
    labels = [str(x) for x in s.get("_options_labels") or []]
    index = s.get("index")
    chosen = (
        set(index) if isinstance(index, list) else ({index} if isinstance(index, int) else set())
    )
    return labels, chosen


def _option_text(label: str) -> str:
    # ipywidgets' SelectView turns spaces into no-break spaces, which keeps column layouts
    return _e(label).replace(" ", "&nbsp;")


def _select(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    labels, chosen = _options(s)
    multiple = " multiple" if isinstance(s.get("index"), list) else ""
    size = int(s.get("rows") or 5)
    options = "".join(
        f"<option{' selected' if i in chosen else ''}>{_option_text(label)}</option>"
        for i, label in enumerate(labels)
    )
    return (
        r.description(s) + f'<select size="{size}"{multiple} style="width:100%">{options}</select>'
    )


def _dropdown(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    labels, chosen = _options(s)
    options = "".join(
        f"<option{' selected' if i in chosen else ''}>{_option_text(label)}</option>"
        for i, label in enumerate(labels)
    )
    return r.description(s) + f"<select>{options}</select>"


def _option_buttons(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    labels, chosen = _options(s)
    if s.get("_model_name") == "RadioButtonsModel":
        items = "".join(
            f'<label><input type="radio" disabled{" checked" if i in chosen else ""}> '
            f"{_e(label)}</label> "
            for i, label in enumerate(labels)
        )
    else:
        items = "".join(
            f'<button type="button" tabindex="-1" '
            f'class="{"nsdl-w-pressed" if i in chosen else ""}">{_e(label)}</button>'
            for i, label in enumerate(labels)
        )
    return r.description(s) + items


def _slider(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    value, low, high = s.get("value"), s.get("min", 0), s.get("max", 100)
    step = s.get("step") or "any"
    return r.description(s) + (
        f'<input type="range" disabled min="{_e(low)}" max="{_e(high)}" step="{_e(step)}" '
        f'value="{_e(value)}"><span>{_e(value)}</span>'
    )


def _range(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    value = s.get("value") or s.get("index") or ["", ""]
    labels = s.get("_options_labels")
    if labels and isinstance(value, list) and all(isinstance(v, int) for v in value):
        value = [labels[v] for v in value if 0 <= v < len(labels)]
    text = " \u2013 ".join(str(v) for v in value)
    return r.description(s) + f"<span>{_e(text)}</span>"


def _progress(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    return r.description(s) + (
        f'<progress value="{_e(s.get("value", 0))}" max="{_e(s.get("max", 100))}"></progress>'
    )


def _image_widget(r: WidgetHtml, s: Mapping[str, Any], _d: int) -> str:
    value = s.get("value")
    if not isinstance(value, (bytes, bytearray, memoryview)):
        return ""
    fmt = str(s.get("format") or "png")
    mime = "image/svg+xml" if fmt == "svg" else f"image/{fmt}"
    size = "".join(f' {k}="{_e(s[k])}"' for k in ("width", "height") if s.get(k))
    data = base64.b64encode(bytes(value)).decode()
    return f'<img src="data:{mime};base64,{data}"{size}>'


def _titled(r: WidgetHtml, s: Mapping[str, Any], d: int) -> str:
    """Tab, Accordion, Stack: the selected child shown, the others one click away (radio
    buttons and <details>, no JavaScript)."""
    children = list(s.get("children") or [])
    titles = [str(t) for t in s.get("titles") or []]
    titles += [""] * (len(children) - len(titles))
    index = s.get("selected_index")
    name = s.get("_model_name")
    if name == "StackModel":
        if isinstance(index, int) and 0 <= index < len(children):
            return r.child(children[index], d)
        return ""
    if name == "AccordionModel":
        return "".join(
            f'<details class="nsdl-w-accordion-item"{" open" if i == index else ""}>'
            f'<summary class="nsdl-w-accordion-title">{_e(title)}</summary>'
            f"{r.child(child, d)}</details>"
            for i, (child, title) in enumerate(zip(children, titles, strict=False))
        )
    group = f"nsdl-tab-{next(_TAB_GROUPS)}-{_PAGE_SALT}"
    radios = "".join(
        f'<input type="radio" name="{group}" id="{group}-{i}"{" checked" if i == index else ""}>'
        for i in range(len(children))
    )
    labels = "".join(
        f'<label class="nsdl-w-tab" for="{group}-{i}">{_e(title or i)}</label>'
        for i, title in enumerate(titles[: len(children)])
    )
    panels = "".join(f'<div class="nsdl-w-panel">{r.child(c, d)}</div>' for c in children)
    return (
        f'<div class="nsdl-w-tabs">{radios}<div class="nsdl-w-tabbar">{labels}</div>'
        f'<div class="nsdl-w-tab-contents">{panels}</div></div>'
    )


def _output(r: WidgetHtml, s: Mapping[str, Any], d: int) -> str:
    return r.outputs(s.get("outputs") or [], d)


def _nothing(_r: WidgetHtml, _s: Mapping[str, Any], _d: int) -> str:
    return ""


_HANDLERS: dict[str, Callable[[WidgetHtml, Mapping[str, Any], int], str]] = {
    "HTMLModel": _html,
    "HTMLMathModel": _html,
    "LabelModel": _label,
    "PasswordModel": _password,
    "TextareaModel": _textarea,
    "CheckboxModel": _checkbox,
    "ValidModel": _label,
    "ButtonModel": _button,
    "ToggleButtonModel": _toggle_button,
    "DropdownModel": _dropdown,
    "SelectModel": _select,
    "SelectMultipleModel": _select,
    "IntProgressModel": _progress,
    "FloatProgressModel": _progress,
    "ImageModel": _image_widget,
    "TabModel": _titled,
    "AccordionModel": _titled,
    "StackModel": _titled,
    "OutputModel": _output,
    "LayoutModel": _nothing,
    **dict.fromkeys(_TEXTS, _text_input),
    **dict.fromkeys(_SLIDERS, _slider),
    **dict.fromkeys(_RANGES, _range),
    **dict.fromkeys(_OPTION_BUTTONS, _option_buttons),
}
