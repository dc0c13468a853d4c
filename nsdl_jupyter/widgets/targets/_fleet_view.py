"""FleetView: the saved targets' GPUs (one row per GPU slot), driver, the CUDA version it runs,
runtimes and cache size in one table (`nj.fleet()`), checked again when the user presses
Refresh, never when built (checking a fleet connects to every host)."""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import ipywidgets as widgets

from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter.profiling import Fleet, fleet
from nsdl_jupyter.targets import Connections
from nsdl_jupyter.widgets._main_shell import MainShellBox


class FleetView(MainShellBox, widgets.VBox):  # type: ignore[misc]
    """Refresh checks every saved target (in a thread, the kernel stays free) and shows the
    table; `saved` defaults to the user's saved connections."""

    def __init__(self, saved: Connections | None = None) -> None:
        self._saved = saved
        self._thread: threading.Thread | None = None
        self.fleet: Fleet | None = None
        self.refresh_button = widgets.Button(
            description="Refresh", icon="refresh", tooltip="check every saved target now"
        )
        self.refresh_button.on_click(lambda _button: self.start_refresh())
        self.status = widgets.HTML("Press Refresh to check the saved targets.")
        self.table = widgets.HTML("")
        super().__init__([widgets.HBox([self.refresh_button, self.status]), self.table])
        self.add_class("nsdl-fleet-view")

    def start_refresh(self) -> None:
        """Check the fleet in the background (a second press while one runs does nothing)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self.refresh_button.disabled = True
        self.status.value = "checking the saved targets\u2026"
        self._thread = threading.Thread(target=self.refresh, daemon=True, name="nsdl-fleet")
        self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def refresh(self) -> Fleet | None:
        """Check every saved target now and show the table."""
        start = time.monotonic()
        try:
            self.fleet = fleet(self._saved, refresh=True)
        except NsdlError as exc:
            self.status.value = f"<span style='color:#b00'>{html.escape(str(exc))}</span>"
            return None
        finally:
            self.refresh_button.disabled = False
        hosts = len({row.name for row in self.fleet.rows})
        self.status.value = (
            f"{hosts} target(s), {len(self.fleet.rows)} slot(s), "
            f"checked in {time.monotonic() - start:.1f} s"
        )
        self.table.value = self.fleet._repr_html_()
        return self.fleet

    def frame(self) -> Any:
        """The last table as a DataFrame (None before the first refresh)."""
        return None if self.fleet is None else self.fleet.to_frame()
