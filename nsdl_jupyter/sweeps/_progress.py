"""Progress of a sweep: done / running / failed / ETA, as an ipywidget inside a Jupyter kernel
and as a tqdm bar elsewhere."""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SweepProgress:
    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    cached: int = 0
    eta_s: float | None = None

    def text(self) -> str:
        eta = f", ETA {self.eta_s:.0f} s" if self.eta_s is not None else ""
        return (
            f"{self.done}/{self.total} done ({self.cached} cached), {self.running} running, "
            f"{self.failed} failed{eta}"
        )


def _in_kernel() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()  # type: ignore[attr-defined]
    return ip is not None and getattr(ip, "kernel", None) is not None


class ProgressDisplay:
    """Shows SweepProgress updates. `cancel` is wired to the widget's Stop button; without it
    (a blocking `sweep()`: the kernel handles no click until the cell ends) the label says to
    interrupt the kernel instead."""

    def __init__(self, total: int, cancel: Any = None) -> None:
        self._bar: Any = None
        self._widget: Any = None
        if _in_kernel():
            import ipywidgets as widgets
            from IPython.display import display

            self._count = widgets.IntProgress(value=0, min=0, max=max(total, 1))
            self._label = widgets.HTML()
            self._stop = widgets.Button(description="Stop", button_style="warning")
            self._stop.on_click(lambda _button: cancel())
            hint = widgets.HTML("<i>interrupt the kernel to stop</i>")
            extra = self._stop if cancel is not None else hint
            self._widget = widgets.HBox([self._count, self._label, extra])
            display(self._widget)  # type: ignore[no-untyped-call]
        else:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="run", desc="sweep", leave=True)

    def update(self, progress: SweepProgress) -> None:
        if self._widget is not None:
            self._count.value = progress.done
            self._label.value = html.escape(progress.text())
        elif self._bar is not None:
            self._bar.n = progress.done
            self._bar.set_postfix_str(
                f"running={progress.running} failed={progress.failed} cached={progress.cached}",
                refresh=False,
            )
            self._bar.refresh()

    def close(self, final: SweepProgress) -> None:
        self.update(final)
        if self._widget is not None:
            self._stop.disabled = True
        elif self._bar is not None:
            self._bar.close()
