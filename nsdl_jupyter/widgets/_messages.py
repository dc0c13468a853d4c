"""Every custom message between a widget's browser views and the kernel, declared once.

Declared here in Python, where the handlers and the payload checks use them; the TypeScript
types (js/src/messages.ts) are generated from this file, so the browser's compiler checks the
same kinds: ``python js/gen_messages.py`` rewrites it. A JSON schema
read by both sides would need a validator and hand-written (or generated) TS types anyway.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from nsdl_jupyter.widgets._protocol import Catalog, Kind, typescript


class Empty(TypedDict):
    pass


class Groups(TypedDict):
    groups: list[int]  # group indexes of the topology (graph/_hierarchy.py)


class Items(TypedDict):
    items: list[int]  # item indexes of the topology


class LayoutAnswer(TypedDict):
    layout_seq: int  # the layout that holds the change; it reached the views before the answer


class ExportImage(TypedDict):
    format: Literal["png", "jpeg"]
    background: str | None
    grid: bool
    scale: float
    max_size: int


class ExportedImage(TypedDict):
    mime: str  # the image bytes are the answer's first buffer


class Key(TypedDict):
    action: Literal["undo", "redo", "save"]


class QuickAdd(TypedDict):
    text: str  # Enter in a quick-add box, with the text typed


class Activate(TypedDict):
    target: Literal["explorer", "type_check", "palette", "parameters"]
    index: int  # the double-clicked option's position in its list (-1 if none)
    label: str  # its text; for "parameters", the double-clicked graph attribute's name


class OpenBody(TypedDict):
    node: str  # the node whose body to open
    attribute: str  # its graph attribute ("then_branch"); "" for its first body or its function


def _layout_request(payload: type) -> Kind:
    return Kind(payload, LayoutAnswer, "kernel")


GRAPH_VIEW = Catalog(
    "GraphView",
    {
        "expand": _layout_request(Groups),
        "collapse": _layout_request(Groups),
        "expand_all": _layout_request(Empty),
        "collapse_all": _layout_request(Empty),
        "reveal": _layout_request(Items),
        "arrange": _layout_request(Empty),
        "open_body": Kind(OpenBody, None, "kernel"),
        "export": Kind(ExportImage, ExportedImage, "browser"),
        "fit": Kind(Empty, None, "browser"),
    },
)

DESIGNER_KEYS = Catalog(
    "DesignerKeys",
    {
        "key": Kind(Key, None, "kernel"),
        "quick_add": Kind(QuickAdd, None, "kernel"),
        "activate": Kind(Activate, None, "kernel"),
    },
)

CATALOGS = (GRAPH_VIEW, DESIGNER_KEYS)


def generated_typescript() -> str:
    """The contents of js/src/messages.ts."""
    return typescript(CATALOGS, "nsdl_jupyter/widgets/_messages.py", "python js/gen_messages.py")
