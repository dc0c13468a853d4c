"""LogView: a runner's log (local, or streamed from a remote target) as escaped text.

Bounded like the tool log (nsdl_jupyter/transforms/_tools.py): the last MAX_LOG_LINES lines in
a ring buffer, the widget redrawn at most every REDRAW_S seconds, so a chatty runner costs a
few redraws of a bounded text instead of one ever longer message per line.
"""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.transforms import MAX_LOG_LINES, Throttle, ToolLog
from nsdl_jupyter.widgets.profile._failure import plain_text


class LogView(widgets.HTML):  # type: ignore[misc]
    """The log of the job last given to `follow`; `text` is what it shows."""

    def __init__(self, limit: int = MAX_LOG_LINES, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.add_class("nsdl-log-view")
        self._limit = limit
        self._log = ToolLog(limit)
        self._lock = threading.Lock()
        self._throttle = Throttle(self.redraw)

    def follow(self, job: Any) -> None:
        """Show `job`'s log (`add_log_listener`: the lines so far, then each new one) in
        place of the previous job's; lines the previous job still sends are ignored."""
        log = ToolLog(self._limit)
        with self._lock:
            self._log = log
        self.redraw()

        def append(line: str) -> None:
            if self._log is log:
                log.append("stderr", line)
                self._throttle.poke()

        job.add_log_listener(append)

    @property
    def text(self) -> str:
        lines, _dropped = self._log.snapshot()
        return "\n".join(line for _stream, line in lines)

    def redraw(self) -> None:
        """Show the kept lines now (the panel calls it when a run ends)."""
        self._throttle.ran()
        with self._lock:
            lines, dropped = self._log.snapshot()
        if not lines:
            self.value = ""
            return
        note = f"... {dropped} earlier lines not shown\n" if dropped else ""
        body = "\n".join(line for _stream, line in lines)
        self.value = (
            "<details><summary>runner log</summary><pre style='max-height:240px;overflow:auto'>"
            f"{html_text(plain_text(note + body))}</pre></details>"
        )
