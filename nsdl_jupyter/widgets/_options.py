"""The keyword options of the widgets, typed once and checked once (lonboard's `MapKwargs`).

A widget takes `**options: Unpack[XOptions]`: mypy checks names and types in the user's code,
and `check_options` refuses an unknown name at run time, naming the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

import ipywidgets as widgets

from nsdl_jupyter._errors import check_keywords


class GraphViewOptions(TypedDict, total=False):
    """Options of `GraphView(source, **options)`."""

    height: int  # pixels
    direction: Literal["LR", "TB"]  # layout direction: top to bottom (default) or left to right
    show_constants: bool  # draw Constant nodes and initializers as boxes
    show_grid: bool
    show_properties: bool  # the properties pane beside the canvas (default True)
    selected: list[str]  # node names selected at start


class DesignerOptions(TypedDict, total=False):
    """Options of `Designer(doc, **options)`."""

    height: int  # pixels of the graph
    selected: list[str]  # node names selected at start
    check_delay: float  # seconds after an edit before the type check runs


class BoxOptions(TypedDict, total=False):
    """What the panels (ActivityPanel, ProfileView, TargetPicker) pass on to their box."""

    layout: widgets.Layout | dict[str, str]


def check_options(
    owner: str, options: Mapping[str, Any], allowed: type[Any], named: tuple[str, ...] = ()
) -> None:
    """Refuse a name that is not a key of the TypedDict `allowed`, naming the valid ones (with
    the `named` keyword parameters `owner` declares itself)."""
    check_keywords(owner, options, [*named, *allowed.__annotations__])
