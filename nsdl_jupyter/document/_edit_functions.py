"""Body, function and domain edits of `ModelDocument`: new If/Loop/Scan bodies, local
functions and the operator domains the model imports. (Opening a body for editing locks the
document, so `open_subgraph` and `open_function` live with the lock in `_document.py`.)"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import onnx_ir as ir

from nsdl_jupyter._errors import text_argument
from nsdl_jupyter._walk import graphs_in, nodes_in
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._document_base import _OP_NAME, DocumentBase
from nsdl_jupyter.document._errors import AttributeEditError, GraphEditError
from nsdl_jupyter.document._events import ChangeEvent
from nsdl_jupyter.document._names import check_tensor_name, unique_name
from nsdl_jupyter.ops import ONNX_DOMAINS


class FunctionEdits(DocumentBase):
    """Edits of bodies, local functions and imported domains, each one undo step."""

    # ------------------------------------------------------------------ bodies
    def create_subgraph(
        self, node: ir.Node | str, attribute: str, *, copy_of: str | None = None
    ) -> None:
        """Give graph attribute `attribute` of `node` a new body (one undo step): empty, or a
        copy of the node's body `copy_of`; its name is unique among the model's graphs."""
        target = self.node(node)
        schema = self.schema(target)
        info = schema.attributes.get(attribute) if schema is not None else None
        if schema is not None and (info is None or info.type != ir.AttributeType.GRAPH):
            raise AttributeEditError(f"{target.op_type} has no graph attribute {attribute!r}")
        if copy_of is None:
            body = ir.Graph([], [], nodes=[])
        else:
            source = target.attributes.get(copy_of)
            if source is None or source.type != ir.AttributeType.GRAPH:
                raise AttributeEditError(f"{target.name} has no body {copy_of!r} to copy")
            body = source.as_graph().clone(allow_outer_scope_values=True)
        taken = {g.name for g in graphs_in(self.graph) if g.name}
        body.name = unique_name(f"{target.name}_{attribute}", taken)
        description = f"new body {target.name}.{attribute}"
        self.apply_edits(
            description,
            [e.SetAttr(target, attribute, ir.Attr(attribute, ir.AttributeType.GRAPH, body))],
            ChangeEvent(description, changed=frozenset({target.name or ""}), edges=True),
        )

    # --------------------------------------------------------- local functions
    def create_function(
        self,
        name: str,
        domain: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        attributes: Mapping[str, Any] | None = None,
        opset: int | None = None,
    ) -> None:
        """Add local function `domain::name` (one undo step; the model then imports `domain`).

        Its body starts valid: each output is an Identity of the first input, to replace in
        `open_function`. `attributes` maps parameter names to defaults (None: no default,
        each instance gives a value). `opset` is the ONNX opset of the body (the model's).
        """
        from nsdl_jupyter.document._bodies import parameter

        key = (text_argument(domain, "domain"), text_argument(name, "function name"), "")
        if domain in ONNX_DOMAINS:
            raise GraphEditError(
                f"function {name!r}: a local function cannot live in the standard ONNX domain "
                f"{domain or 'ai.onnx'!r} (its operators are ONNX's, and importing it again "
                "changes the ONNX opset): give it a custom domain, such as 'local'"
            )
        if not _OP_NAME.fullmatch(name) or not _DOMAIN_NAME.fullmatch(domain):
            raise GraphEditError(
                f"function {domain!r}::{name!r}: name and domain must be identifiers "
                "(the domain may contain '.')"
            )
        if key in self.model.functions:
            raise GraphEditError(f"the model already has a function {domain}::{name}")
        if not inputs or not outputs:
            raise GraphEditError("a function needs at least one input and one output")
        for tensor in [*inputs, *outputs]:
            check_tensor_name(tensor, {})
        if len({*inputs, *outputs}) != len(inputs) + len(outputs):
            raise GraphEditError("function input and output names must all differ")
        params = [parameter(k, v) for k, v in (attributes or {}).items()]
        first = ir.Value(name=inputs[0])
        body_inputs = [first, *(ir.Value(name=n) for n in inputs[1:])]
        nodes = [ir.Node("", "Identity", [first], name=f"{out}_placeholder") for out in outputs]
        for node, out in zip(nodes, outputs, strict=True):
            node.outputs[0].name = out
        body = ir.Graph(
            body_inputs,
            [n.outputs[0] for n in nodes],
            nodes=nodes,
            opset_imports={"": opset or self.graph.opset_imports.get("", 1)},
            name=name,
        )
        function = ir.Function(domain, name, "", graph=body, attributes=params)
        edits: list[e.Edit] = [e.SetMapping(self.model.functions, key, function)]
        if domain not in self.graph.opset_imports:
            edits.append(e.SetMapping(self.graph.opset_imports, domain, 1))
        self.apply_edits(
            f"new function {domain}::{name}", edits, ChangeEvent(f"new function {name}")
        )

    def delete_function(self, name: str, domain: str) -> None:
        """Remove local function `domain::name` (one undo step); its instances stay, as
        custom operators."""
        key = self._function_key(name, domain)
        description = f"delete function {domain}::{name}"
        self.apply_edits(
            description, [e.SetMapping(self.model.functions, key, None)], ChangeEvent(description)
        )

    def _function_key(self, name: str, domain: str) -> tuple[str, str, str]:
        key = (domain, name, "")
        if key not in self.model.functions:
            known = [f"{d}::{n}" for d, n, _ in self.model.functions]
            raise GraphEditError(f"no local function {domain}::{name}; the model has {known}")
        return key

    # ----------------------------------------------------------------- domains
    def import_domain(self, domain: str, version: int = 1) -> None:
        """Import operator domain `domain` at `version` (one undo step), so nodes of custom
        operators of that domain (TensorRT plugins, vendor ops) can be added."""
        domain = "" if text_argument(domain, "domain") == "ai.onnx" else domain
        if not _DOMAIN_NAME.fullmatch(domain):
            raise GraphEditError(
                f"domain {domain!r} is not a valid name: use letters, digits, '.', '_' and '-'"
            )
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise GraphEditError(f"opset version must be an integer >= 1, got {version!r}")
        imported = self.graph.opset_imports.get(domain)
        if imported == version:
            return
        if imported is not None:
            raise GraphEditError(
                f"the model already imports {domain!r} at version {imported}: nodes of that "
                "domain follow it (convert_opset changes the ONNX opset)"
            )
        description = f"import domain {domain} v{version}"
        self.apply_edits(
            description,
            [e.SetMapping(self.graph.opset_imports, domain, version)],
            ChangeEvent(description),
        )

    def remove_domain(self, domain: str) -> None:
        """Stop importing operator domain `domain` (one undo step). Refused while a node or a
        local function uses it; the alias 'ai.onnx' beside the default domain "" always goes
        (the default import covers its nodes)."""
        imports = self.graph.opset_imports
        if domain not in imports:
            raise GraphEditError(
                f"the model does not import {domain!r}; it imports {dict(imports)}"
            )
        alias = domain == "ai.onnx" and "" in imports
        if not alias:
            if domain in ("", "ai.onnx"):
                raise GraphEditError(
                    "the default ONNX domain cannot be removed: a model needs an ONNX opset "
                    "(convert_opset changes its version)"
                )
            users = [n.name for n in nodes_in(self.graph) if n.domain == domain]
            users += [f"{d}::{n}" for d, n, _ in self.model.functions if d == domain]
            if users:
                raise GraphEditError(
                    f"domain {domain!r} is still used by {users[:5]}: remove them first"
                )
        description = f"remove domain {domain or 'ai.onnx'}"
        self.apply_edits(
            description, [e.SetMapping(imports, domain, None)], ChangeEvent(description)
        )


_DOMAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
