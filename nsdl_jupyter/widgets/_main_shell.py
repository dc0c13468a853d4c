"""Our widgets' messages from the browser are handled on the kernel's main shell, one at a
time and between cells, whatever JupyterLab's subshell setting.

JupyterLab 4.4+ sends widget messages over a kernel subshell where the kernel has them
(ipykernel 7; the setting "Kernel Comms over subshells", by default one subshell per comm
target), and ipykernel sends each message of a comm to the shell that last published on it
(`BaseComm._reply_subshell_for`). A widget's messages then ran on the main thread or on the
subshell's, depending on what came before, and two could run at once: two views of one
GraphView were answered with the same layout (a CI run). Our handlers and callbacks read and
change the document and its scene, which are not thread-safe, so every message of our widgets
(requests, events, state updates, button clicks in the panes) goes to the main shell, as
before subshells. Without a kernel, or with one without subshells (everything is on its main
shell), nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

_ROUTED = "_nsdl_main_shell"  # on a comm: its messages go to the main shell
_WATCHED = "_nsdl_children_watched"  # on a box: new children are routed too


def route_to_main_shell(widget: Any, keep: Callable[[Any], bool] | None = None) -> None:
    """Send every message of `widget`'s views to the main shell, but those `keep(data)` says
    keep ipykernel's routing (answers to a request the kernel sent: the thread that asked may
    be waiting for them)."""
    comm: Any = getattr(widget, "comm", None)
    default_route = getattr(comm, "_reply_subshell_for", None)
    if default_route is None or getattr(comm, _ROUTED, False):
        return

    def route(data: Any, default: str | None) -> str | None:
        chosen: str | None = default_route(data, default)  # keeps ipykernel's bookkeeping
        return chosen if keep is not None and keep(data) else None

    comm._reply_subshell_for = route
    setattr(comm, _ROUTED, True)


def route_tree_to_main_shell(root: widgets.Widget) -> None:
    """`route_to_main_shell` for `root` and every widget in its boxes, now and whenever a
    box's children change."""
    stack = [root]
    while stack:
        widget = stack.pop()
        route_to_main_shell(widget)
        if isinstance(widget, widgets.Box):
            if not getattr(widget, _WATCHED, False):
                setattr(widget, _WATCHED, True)
                widget.observe(_children_changed, names="children")
            stack.extend(widget.children)


def _children_changed(change: dict[str, Any]) -> None:
    route_tree_to_main_shell(change["owner"])


class MainShellBox:
    """For our box widgets (list it before the widget base class): the box and everything in
    it handled on the main shell (`route_tree_to_main_shell`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        route_tree_to_main_shell(self)  # type: ignore[arg-type]
