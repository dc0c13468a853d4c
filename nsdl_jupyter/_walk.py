"""Walks over an onnx_ir model shared by the document and the transforms: the subgraphs of a
node, the graphs of a model, and the nodes of every body and local function; and the tensors
of a model proto (where external data is named)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import onnx
import onnx_ir as ir

_GRAPH_TYPES = (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
_TENSOR = onnx.AttributeProto.TENSOR
_TENSORS = onnx.AttributeProto.TENSORS
_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS


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


def all_tensors(proto: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    yield from _graph_tensors(proto.graph)
    for function in proto.functions:
        yield from _nodes_tensors(function.node)


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    yield from _nodes_tensors(graph.node)


def _nodes_tensors(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.TensorProto]:
    # one loop, no generator per node: it runs over every node of every model opened
    for node in nodes:
        for attribute in node.attribute:
            # by type, as onnx_ir reads attributes (a field of another type is never read)
            kind = attribute.type
            if kind == _TENSOR:
                yield attribute.t
            elif kind == _TENSORS:
                yield from attribute.tensors
            elif kind == _GRAPH:
                yield from _graph_tensors(attribute.g)
            elif kind == _GRAPHS:
                for graph in attribute.graphs:
                    yield from _graph_tensors(graph)
