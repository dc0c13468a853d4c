"""ProfileDock: where the Designer shows a profile ("Profile from here"): below the canvas and
its panes, across the Designer's whole width, so the canvas keeps its width while the
timeline and table get room. Its height flips between two sizes (the header's button) and
follows a drag of its lower right corner (CSS `resize`); the close button hides it."""

from __future__ import annotations

import ipywidgets as widgets
import traitlets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets.designer._tool_window import icon_button

# the dock's body, normal and tall. Normal follows the window: the notebook shows about 85 %
# of it, and a third of the window leaves the canvas above at least as tall as the dock
# (1280x800: 256 px of dock, some 330 px of canvas in view); tall is the button's choice.
HEIGHTS = {False: "min(300px, 32vh)", True: "560px"}

STYLE = """
.nsdl-profile-dock { border-top: 1px solid var(--jp-border-color2, #e0e0e0); min-width: 0; }
.nsdl-profile-dock-header { align-items: center; min-width: 0; }
.nsdl-profile-dock-header > .nsdl-profile-dock-title { flex: 1 1 auto; min-width: 0; }
.nsdl-profile-dock-title .widget-html-content { overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }
.nsdl-profile-dock-body { overflow: auto; resize: vertical; min-height: 120px;
  container: nsdl-pane / inline-size; box-sizing: border-box; padding: 2px 4px; }
"""


class ProfileDock(MainShellBox, widgets.VBox):  # type: ignore[misc]
    """Holds one widget (the ActivityPanel of the last "Profile from here") below the canvas."""

    tall = traitlets.Bool(False)

    def __init__(self) -> None:
        self.title = widgets.HTML("<b>Profile</b>")
        self.title.add_class("nsdl-profile-dock-title")
        self.size_button = icon_button("Size", "a taller or a lower profile dock", "expand")
        self.size_button.add_class("nsdl-profile-dock-size")
        self.size_button.on_click(lambda _b: setattr(self, "tall", not self.tall))
        self.close_button = icon_button("Close", "hide the profile dock", "times")
        self.close_button.add_class("nsdl-profile-dock-close")
        self.close_button.on_click(lambda _b: self.hide())
        header = widgets.HBox([self.title, self.size_button, self.close_button])
        header.add_class("nsdl-profile-dock-header")
        self.body = widgets.Box(layout=widgets.Layout(height=HEIGHTS[False], display="block"))
        self.body.add_class("nsdl-profile-dock-body")
        super().__init__([header, self.body], layout=widgets.Layout(display="none"))
        self.add_class("nsdl-profile-dock")

    @property
    def content(self) -> widgets.Widget | None:
        return self.body.children[0] if self.body.children else None

    def show(self, content: widgets.Widget, title: str = "Profile") -> None:
        """Dock `content` (replacing what was there) and open the dock."""
        self.body.children = (content,)
        self.title.value = f"<b>{html_text(title)}</b>"
        self.layout.display = ""

    def hide(self) -> None:
        self.layout.display = "none"

    @property
    def shown(self) -> bool:
        return bool(self.layout.display != "none")

    @traitlets.observe("tall")
    def _on_tall(self, change: dict[str, object]) -> None:
        tall = bool(change["new"])
        self.body.layout.height = HEIGHTS[tall]
        self.size_button.icon = "compress" if tall else "expand"
