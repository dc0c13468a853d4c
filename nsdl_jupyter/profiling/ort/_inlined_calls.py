"""Which call of a model-local function an inlined onnxruntime node belongs to, by its name.

onnxruntime inlines each call of a model-local function (TorchScript's
`export_modules_as_functions`) and names what it copies `_inlfunc_<function>_<name in the
body>`, the calls after the first of a function `_inlfunc_<function>_token_<k>_<name>` with `k`
from the session's one counter, so in the order it inlined them: the calls' graph order. Its
own rewrites keep the tag in the names they derive (`_inlfunc_Block_MatMul_4/MatMulAddFusion`,
`_inlfunc_BasicBlock_onnx::Conv_168_nchwc`) but not in the tensors they make (`reorder_token_9`,
`gemm_output_reshape_arg`): the tag, not the tensors, tells one call's nodes from the next's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import onnx

INLINED_PREFIX = "_inlfunc_"  # onnxruntime's names in an inlined function body (graph.cc)
NCHWC_SUFFIX = "_nchwc"  # an NCHWc Conv is named after the tensor it stands for
_TOKEN = re.compile(r"(?:_token_(\d+))?_(.+)")


class InlinedCalls:
    """The model-local functions of a model and their calls, to read inlined names against."""

    def __init__(self, original: onnx.ModelProto) -> None:
        inner: dict[str, set[str]] = {}
        for function in original.functions:
            names = inner.setdefault(function.name, set())
            for node in function.node:
                names.add(node.name)
                names.update(t for t in (*node.input, *node.output) if t)
        # longest first: "BasicBlock.1" before "BasicBlock"
        self._inner = sorted(inner.items(), key=lambda item: -len(item[0]))
        self._calls: dict[str, list[str]] = {}
        for node in original.graph.node:
            if node.op_type in inner and node.name:
                self._calls.setdefault(node.op_type, []).append(node.name)

    def tag(self, name: str) -> str | None:
        """`_inlfunc_<function>[_token_<k>]_` of a node or tensor name the inliner gave (or a
        rewrite derived from one); None for any other name."""
        if not name.startswith(INLINED_PREFIX) or not self._inner:
            return None
        for candidate in dict.fromkeys((name, name.split("/", 1)[0])):
            base = candidate.removesuffix(NCHWC_SUFFIX)
            for function, names in self._inner:
                head = INLINED_PREFIX + function
                match = _TOKEN.fullmatch(base[len(head) :]) if base.startswith(head) else None
                if match is not None and match.group(2) in names:
                    return f"{head}_token_{match.group(1)}_" if match.group(1) else f"{head}_"
        return None

    def calls_by_tag(self, tags: Iterable[str]) -> dict[str, str]:
        """Tag -> the call node it copies: per function, the k-th tag in inlining order (the
        untokened first, then by token) is the k-th call in graph order. A function whose tags
        and calls do not pair one to one gets none (a call copied without a tagged name)."""
        by_function: dict[str, list[tuple[int, str]]] = {}
        for tag in set(tags):
            for function, _ in self._inner:
                head = INLINED_PREFIX + function
                if tag == f"{head}_":
                    by_function.setdefault(function, []).append((-1, tag))
                    break
                token = re.fullmatch(re.escape(head) + r"_token_(\d+)_", tag)
                if token is not None:
                    by_function.setdefault(function, []).append((int(token.group(1)), tag))
                    break
        found: dict[str, str] = {}
        for function, ranked in by_function.items():
            calls = self._calls.get(function, [])
            if len(ranked) == len(calls):
                found.update(zip((tag for _, tag in sorted(ranked)), calls, strict=True))
        return found
