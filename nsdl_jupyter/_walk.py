"""Walks over an onnx_ir model shared by the document and the transforms: the subgraphs of a
node, the graphs of a model, and the nodes of every body and local function."""

from __future__ import annotations

from collections.abc import Iterator

import onnx_ir as ir

_GRAPH_TYPES = (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)


def subgraphs(node: ir.Node) -> list[ir.Graph]:
    """The graphs held by `node`'s attributes (If branches, Loop/Scan bodies), in order."""
    graphs: list[ir.Graph] = []
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            graphs.append(attr.as_graph())
        elif attr.type == ir.AttributeType.GRAPHS:
            graphs.extend(attr.as_graphs())
    return graphs


def has_subgraphs(node: ir.Node) -> bool:
    """True when an attribute of `node` holds a graph (a control-flow node)."""
    return any(attr.type in _GRAPH_TYPES for attr in node.attributes.values())


def nodes_in(graph: ir.Graph | ir.Function) -> Iterator[ir.Node]:
    """The nodes of `graph` and of every subgraph inside it, at any depth."""
    return iter(ir.traversal.RecursiveGraphIterator(graph))


def every_node(model: ir.Model) -> Iterator[ir.Node]:
    """The nodes of the main graph, of every body and of every local function."""
    yield from nodes_in(model.graph)
    for function in model.functions.values():
        yield from nodes_in(function)


def graphs_in(graph: ir.Graph) -> list[ir.Graph]:
    """`graph` and every subgraph inside it, outer graphs first.

    One plain pass, not `ir.traversal`: its generator step per node was a third of the time to
    open a 20,000-node model that has no subgraph at all.
    """
    found = [graph]
    for nested in found:  # grows while it is read: nested graphs are visited in turn
        for node in nested:
            attributes = node.attributes
            if not attributes:
                continue
            for attr in attributes.values():
                if attr.type == ir.AttributeType.GRAPH:
                    found.append(attr.as_graph())
                elif attr.type == ir.AttributeType.GRAPHS:
                    found.extend(attr.as_graphs())
    return found
