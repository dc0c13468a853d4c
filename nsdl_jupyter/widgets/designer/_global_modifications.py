"""GlobalModifications: the Designer's "Global Modifications" dialog: pick a modification
(FP16, sanitize, opset, tensor dtype, a user tool), set its options, Run with progress and
Cancel; the result lands on the document as one undoable edit and a summary says what changed
(nodes and initializers before/after, the largest output difference; for FP16 with
validation, the nodes kept float32 and why)."""

from __future__ import annotations

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors import (
    Modification,
    ModificationResult,
    ModificationRun,
    OptionSpec,
    OptionValue,
    modifications,
)
from nsdl_jupyter.widgets.designer._tool_window import ToolWindow, button, style_widget
from nsdl_jupyter.widgets.profile._failure import failure_html

_FULL = "100%"
_KEPT_ROWS = 20  # nodes kept float32 listed in the summary
# narrow panes: fields take the pane's width under their label; the summary wraps
_STYLE = """<style>
.nsdl-global-modifications .nsdl-modify-label { font-size: 12px; line-height: 16px; }
.nsdl-global-modifications .widget-checkbox { height: auto !important; }
.nsdl-global-modifications .widget-checkbox label { white-space: normal; line-height: 16px; }
.nsdl-modify-result .widget-html-content, .nsdl-modify-result div { white-space: normal;
  overflow-wrap: anywhere; line-height: 16px; }
.nsdl-modify-result table { margin-top: 4px; }
</style>"""


def _control(spec: OptionSpec) -> widgets.Widget:
    """The value widget of `spec`: a checkbox with its label, else a full-width field."""
    layout = widgets.Layout(width=_FULL)
    tooltip = {"tooltip": spec.help} if spec.help else {}
    if isinstance(spec.default, bool):
        return widgets.Checkbox(spec.default, description=spec.label, indent=False,
                                layout=layout, **tooltip)  # fmt: skip
    if spec.choices or spec.name == "tool":
        return widgets.Dropdown(options=list(spec.choices), value=spec.default or None,
                                layout=layout, **tooltip)  # fmt: skip
    if isinstance(spec.default, float):
        return widgets.FloatText(spec.default, layout=layout, **tooltip)
    if isinstance(spec.default, int):
        return widgets.IntText(spec.default, layout=layout, **tooltip)
    return widgets.Text(spec.default, placeholder=spec.help, layout=layout, **tooltip)


def _row(spec: OptionSpec, control: widgets.Widget) -> widgets.Widget:
    """`control` under its label (a checkbox carries its own)."""
    if isinstance(control, widgets.Checkbox):
        return control
    label = widgets.HTML(f"<span class='nsdl-modify-label'>{html_text(spec.label)}</span>")
    return widgets.VBox([label, control], layout=widgets.Layout(width=_FULL))


def summary_html(result: ModificationResult) -> str:
    """The finished run as a small table: counts before/after, per-output differences."""
    after = result.after or result.before
    rows = [
        f"<tr><th></th><th>before</th><th>after</th></tr>"
        f"<tr><td>nodes</td><td>{result.before.nodes}</td><td>{after.nodes}</td></tr>"
        f"<tr><td>initializers</td><td>{result.before.initializers}</td>"
        f"<td>{after.initializers}</td></tr>"
    ]
    diffs = "".join(
        f"<tr><td>{html_text(d.name)}</td><td>{d.max_abs:.3g}</td><td>{d.max_rel:.3g}</td>"
        f"<td>{'ok' if d.ok else 'over ' + format(d.limit, '.3g')}</td></tr>"
        for d in result.differences
    )
    table = f"<table class='nsdl-tensor-table nsdl-modify-counts'>{''.join(rows)}</table>"
    if diffs:
        table += (
            "<table class='nsdl-tensor-table nsdl-modify-diffs'><tr><th>output</th>"
            f"<th>max abs diff</th><th>max rel diff</th><th></th></tr>{diffs}</table>"
        )
    if result.kept_float32:
        shown = list(result.kept_float32.items())
        kept = "".join(
            f"<tr><td>{html_text(name)}</td><td>{html_text(why)}</td></tr>"
            for name, why in shown[:_KEPT_ROWS]
        )
        if len(shown) > _KEPT_ROWS:
            kept += f"<tr><td colspan='2'>and {len(shown) - _KEPT_ROWS} more</td></tr>"
        table += (
            "<table class='nsdl-tensor-table nsdl-modify-kept'><tr><th>kept float32</th>"
            f"<th>converting it gave</th></tr>{kept}</table>"
        )
    status = result.status
    notes = [] if status is None else [*status.errors, *status.warnings]
    if result.comparison:
        notes.insert(0, f"outputs not compared: {result.comparison}")
    note_html = "".join(f"<div class='nsdl-note'>{html_text(n)}</div>" for n in notes[:8])
    undo = " (Undo restores the model)" if result.changed else ""
    return (
        f"<div class='nsdl-ok nsdl-modify-summary'>{html_text(result.summary())}"
        f" in {result.seconds:.1f} s{undo}</div>{table}{note_html}"
    )


class GlobalModifications(ToolWindow):
    """Pick a modification and its options; `run()` starts it (see `wait`), `cancel()`."""

    css_name = "global-modifications"

    def __init__(self, doc: ModelDocument) -> None:
        super().__init__(doc)
        self.choices: dict[str, Modification] = {m.name: m for m in modifications(doc)}
        self.choice = widgets.Dropdown(
            options=[(m.label, m.name) for m in self.choices.values()],
            layout=widgets.Layout(width=_FULL),
        )
        self.choice.add_class("nsdl-modify-choice")
        self.help = widgets.HTML()
        self.options_box = widgets.VBox()
        self.controls: dict[str, widgets.Widget] = {}
        self.run_button = button("Run", "apply the modification (one undo step)", icon="play")
        self.run_button.button_style = "primary"
        self.run_button.add_class("nsdl-modify-run")
        self.cancel_button = button("Cancel", "stop and keep the model as it is", icon="stop")
        self.cancel_button.add_class("nsdl-modify-cancel")
        self.cancel_button.disabled = True
        self.progress = widgets.FloatProgress(0.0, min=0.0, max=1.0,
                                              layout=widgets.Layout(width="120px"))  # fmt: skip
        self.phase = widgets.Label("")
        self.result = widgets.HTML(layout=widgets.Layout(width=_FULL))
        self.result.add_class("nsdl-modify-result")
        self.current: ModificationRun | None = None
        self.choice.observe(lambda _c: self._show_options(), names="value")
        self.run_button.on_click(lambda _b: self.run())
        self.cancel_button.on_click(lambda _b: self.cancel())
        self.children = [
            style_widget(),
            widgets.HTML(_STYLE, layout=widgets.Layout(display="none")),
            self.choice,
            self.help,
            self.options_box,
            widgets.HBox(
                [self.run_button, self.cancel_button, self.progress, self.phase],
                layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
            ),
            self.result,
        ]
        self._show_options()

    @property
    def modification(self) -> Modification:
        return self.choices[str(self.choice.value)]

    def _show_options(self) -> None:
        chosen = self.modification
        self.help.value = f"<div class='nsdl-note'>{html_text(chosen.help)}</div>"
        self.controls = {spec.name: _control(spec) for spec in chosen.options}
        for name, control in self.controls.items():
            control.add_class(f"nsdl-modify-{name.replace('_', '-')}")
        self.options_box.children = [
            _row(spec, self.controls[spec.name]) for spec in chosen.options
        ]

    def values(self) -> dict[str, OptionValue]:
        return {name: control.value for name, control in self.controls.items()}

    def run(self) -> ModificationRun | None:
        """Start the chosen modification; None when its options are refused (shown)."""
        if self.current is not None and not self.current.done:
            return None
        try:
            self.current = ModificationRun(
                self.doc,
                self.modification,
                self.values(),
                on_progress=self._on_progress,
                on_done=self._on_done,
            )
        except Exception as error:  # options or document refused: nothing started
            self.result.value = failure_html(error)
            return None
        self.result.value = ""
        self.progress.value, self.progress.bar_style = 0.0, ""
        self.phase.value = "starting"
        self.run_button.disabled, self.cancel_button.disabled = True, False
        return self.current

    def _on_progress(self, phase: str, fraction: float) -> None:
        self.progress.value, self.phase.value = fraction, phase

    def _on_done(self, run: ModificationRun) -> None:
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self.phase.value = run.state
        if run.state == "done":
            self.progress.value, self.progress.bar_style = 1.0, "success"
            self.result.value = summary_html(run.result)
        elif run.state == "cancelled":
            self.progress.bar_style = "warning"
            self.result.value = "<div class='nsdl-note'>Cancelled: the model is unchanged.</div>"
        else:
            self.progress.bar_style = "danger"
            assert run.error is not None
            self.result.value = failure_html(run.error)

    def cancel(self) -> None:
        if self.current is not None:
            self.current.cancel()

    def wait(self, timeout: float | None = None) -> str | None:
        """Block until the current run has ended; its state (done, failed, cancelled)."""
        return None if self.current is None else self.current.wait(timeout)
