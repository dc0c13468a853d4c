"""Every custom message between a widget's browser views and the kernel, declared once.

Declared here in Python, where the handlers and the payload checks use them; the TypeScript
types (js/src/messages.ts) are generated from this file, so the browser's compiler checks the
same kinds: ``python js/gen_messages.py`` rewrites it. A JSON schema
read by both sides would need a validator and hand-written (or generated) TS types anyway.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from nsdl_jupyter.graph import (
    GroupProperties,
    NodeProperties,
    TensorProperties,
    TensorStats,
)
from nsdl_jupyter.widgets._protocol import Catalog, Kind, typescript


class Empty(TypedDict):
    pass


class Groups(TypedDict):
    groups: list[int]  # group indexes of the topology (graph/_hierarchy.py)


class Items(TypedDict):
    items: list[int]  # item indexes of the topology


class LayoutAnswer(TypedDict):
    layout_seq: int  # the layout that holds the change; it reached the views before the answer


class ItemRef(TypedDict):
    item: int  # item index of the topology


class TensorRef(TypedDict):
    tensor: int  # tensor index of the topology; -1: the tensor of a graph input/output box
    item: int  # an item at one end of an edge that carries it (or that box)


class GroupRef(TypedDict):
    group: int  # group index of the topology


class TensorName(TypedDict):
    name: str  # an initializer of the graph


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


class Nodes(TypedDict):
    nodes: list[str]  # node names


class Terminals(TypedDict):
    """Terminals of the nodes asked for, one entry per known node in each list (columns)."""

    nodes: list[str]
    tensors: list[list[str]]  # per input: the linked tensor, "" when free
    states: list[list[str]]  # per input: "free", "linked" or "initializer"
    optional: list[list[bool]]  # per input
    variadic: list[bool]  # the last input takes any number: a "+" slot follows it
    outputs: list[list[str]]  # output tensor names


class Link(TypedDict):
    tensor: str  # an output tensor, linked to input `input` of `node`
    node: str
    input: int
    from_node: str  # a link end dragged from input `from_input` of `from_node` ("": a new link)
    from_input: int


class Unlink(TypedDict):
    nodes: list[str]  # input inputs[k] of nodes[k] becomes empty
    inputs: list[int]


class Move(TypedDict):
    nodes: list[str]
    x: list[float]  # new top-left corners in layout coordinates, one per node
    y: list[float]


class Rename(TypedDict):
    node: str
    name: str


class Precision(TypedDict):
    nodes: list[str]
    precision: str  # a TensorRT layer precision, or "none"


class Extract(TypedDict):
    nodes: list[str]
    downstream: bool  # "extract from here": the nodes and everything they feed


class AddAt(TypedDict):
    text: str  # an operator as typed in quick add ("Relu", "com.microsoft.Gelu")
    x: float  # where the pointer is, in layout coordinates
    y: float
    link: bool  # feed it from the selected node (quick add); a palette drop does not


class Operators(TypedDict):
    """Quick add's vocabulary: every operator the model can use (its opsets, ORT contrib ops
    when imported, its local functions), asked once when quick add opens."""

    keys: list[str]  # "Conv", "com.microsoft::Attention" (the palette's keys)
    categories: list[str]  # per key: its palette category


class Done(TypedDict):
    message: str  # what was done (the undo description, or the file written)


class ResizePane(TypedDict):
    pane: Literal["left", "right"]  # the Designer's side pane whose strip was dragged
    width: int  # its new width in CSS px


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
        # the properties pane (nsdl_jupyter/graph/_properties.py answers)
        "node_properties": Kind(ItemRef, NodeProperties, "kernel"),
        "tensor_properties": Kind(TensorRef, TensorProperties, "kernel"),
        "group_properties": Kind(GroupRef, GroupProperties, "kernel"),
        "tensor_stats": Kind(TensorName, TensorStats, "kernel"),
        "open_body": Kind(OpenBody, None, "kernel"),
        "terminals": Kind(Nodes, Terminals, "kernel"),
        "link": Kind(Link, Done, "kernel"),
        "unlink": Kind(Unlink, Done, "kernel"),
        "delete": Kind(Nodes, Done, "kernel"),
        "move": Kind(Move, Done, "kernel"),
        "rename": Kind(Rename, Done, "kernel"),
        "precision": Kind(Precision, Done, "kernel"),
        "extract": Kind(Extract, Done, "kernel"),
        "profile": Kind(Nodes, Done, "kernel"),
        "add_at": Kind(AddAt, Done, "kernel"),
        "operators": Kind(Empty, Operators, "kernel"),
        "export": Kind(ExportImage, ExportedImage, "browser"),
        "fit": Kind(Empty, None, "browser"),
        # a view zoomed in enough to draw tensor shapes, or hovers an edge: the kernel runs
        # shape inference (once) and sets `_shapes`
        "tensor_shapes": Kind(Empty, None, "kernel"),
    },
)

DESIGNER_KEYS = Catalog(
    "DesignerKeys",
    {
        "key": Kind(Key, None, "kernel"),
        "quick_add": Kind(QuickAdd, None, "kernel"),
        "activate": Kind(Activate, None, "kernel"),
        "resize_pane": Kind(ResizePane, None, "kernel"),
    },
)

CATALOGS = (GRAPH_VIEW, DESIGNER_KEYS)


def generated_typescript() -> str:
    """The contents of js/src/messages.ts."""
    return typescript(CATALOGS, "nsdl_jupyter/widgets/_messages.py", "python js/gen_messages.py")
