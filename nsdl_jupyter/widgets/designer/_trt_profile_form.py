"""OptimizationProfileForm: the model's TensorRT optimization profiles, one min/opt/max row per
dynamic top-level input, kept in the companion file through `doc.tensorrt` (undoable)."""

from __future__ import annotations

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.document import ChangeEvent, DocumentError, ModelDocument
from nsdl_jupyter.editors import ProfileRow, apply_profile, profile_rows
from nsdl_jupyter.widgets.designer._tool_window import MessageLine, ToolWindow, button, style_widget


class OptimizationProfileForm(ToolWindow):
    """Pick a profile (or "new profile"), edit min/opt/max per dynamic input, Apply or Remove."""

    css_name = "trt-profiles"

    def __init__(self, doc: ModelDocument) -> None:
        super().__init__(doc)
        self.profile = widgets.Dropdown(description="profile", layout=widgets.Layout(width="auto"))
        self.profile.add_class("nsdl-profile-choice")
        self.rows_box = widgets.VBox()
        self.apply_button = button("Apply", "set this profile's shapes (one undo step)")
        self.apply_button.add_class("nsdl-profile-apply")
        self.remove_button = button("Remove profile", "remove this optimization profile")
        self.message = MessageLine()
        self.fields: dict[str, tuple[widgets.Text, widgets.Text, widgets.Text]] = {}
        self._binding = False
        self.profile.observe(lambda _c: None if self._binding else self._fill(), names="value")
        self.apply_button.on_click(lambda _b: self.apply())
        self.remove_button.on_click(lambda _b: self.remove())
        self.children = [
            style_widget(),
            widgets.HTML(
                "<span class='nsdl-note'>TensorRT optimization profiles: min / opt / max per "
                "dynamic input (sizes like 1x3x224x224)</span>"
            ),
            self.profile,
            self.rows_box,
            widgets.HBox([self.apply_button, self.remove_button]),
            self.message,
        ]
        self._refresh()

    def _refresh(self, keep: int | None = None) -> None:
        count = len(self.doc.tensorrt.profiles)
        options = [(f"profile {i}", i) for i in range(count)] + [("new profile", count)]
        current = self.profile.value if keep is None else keep
        self._binding = True
        try:
            self.profile.options = options
            self.profile.value = current if isinstance(current, int) and current <= count else 0
        finally:
            self._binding = False
        self._fill()

    def _fill(self) -> None:
        rows = profile_rows(self.doc, int(self.profile.value))
        self.fields = {row.input: self._texts(row) for row in rows}
        none = widgets.HTML("<span class='nsdl-note'>the model has no dynamic inputs</span>")
        self.rows_box.children = [
            widgets.VBox(
                [
                    widgets.HTML(
                        f"<b>{html_text(row.input)}</b> "
                        f"<span class='nsdl-note'>{html_text(row.dims)}</span>"
                    ),
                    widgets.HBox(list(self.fields[row.input])),
                ]
            )
            for row in rows
        ] or [none]
        self.apply_button.disabled = not rows
        self.remove_button.disabled = int(self.profile.value) >= len(self.doc.tensorrt.profiles)

    @staticmethod
    def _texts(row: ProfileRow) -> tuple[widgets.Text, widgets.Text, widgets.Text]:
        def text(key: str) -> widgets.Text:
            field = widgets.Text(
                value=getattr(row, key), placeholder=key, description=key,
                layout=widgets.Layout(width="120px"), style={"description_width": "28px"},
            )  # fmt: skip
            field.add_class(f"nsdl-profile-{key}")
            return field

        return text("min"), text("opt"), text("max")

    def apply(self) -> None:
        """Set the chosen profile from the form (one undo step; an error changes nothing)."""
        texts = {name: (a.value, b.value, c.value) for name, (a, b, c) in self.fields.items()}
        try:
            apply_profile(self.doc, int(self.profile.value), texts)
        except DocumentError as error:
            self.message.show(str(error))
            return
        self.message.show(None)

    def remove(self) -> None:
        try:
            self.doc.tensorrt.remove_profile(int(self.profile.value))
        except DocumentError as error:
            self.message.show(str(error))

    def _on_document_event(self, event: ChangeEvent) -> None:
        if event.tensorrt or event.graph_io or event.source == "load":
            self._refresh()
