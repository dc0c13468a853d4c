"""Schema lookups by (operator, domain, opset), cached: the document asks on every edit."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Container, Mapping
from dataclasses import dataclass

import onnx

from nsdl_jupyter.ops._errors import UnknownDomainError, UnknownOperatorError
from nsdl_jupyter.ops._schema_info import OpSchemaInfo
from nsdl_jupyter.ops._schema_sources import (
    RawSchema,
    convert,
    normalize_domain,
    onnx_raw_schemas,
    onnxruntime_raw_schemas,
)

# operators ONNX deprecated, and what replaced them (for the error message)
_REPLACEMENTS = {
    "Upsample": "Resize",
    "Scatter": "ScatterElements",
    "TreeEnsembleClassifier": "TreeEnsemble",
    "TreeEnsembleRegressor": "TreeEnsemble",
}


@dataclass(frozen=True)
class _DomainIndex:
    """All versions of all operators of one domain, oldest first per operator."""

    versions: Mapping[str, tuple[RawSchema, ...]]
    latest: int


def _build(raws: list[RawSchema]) -> dict[str, _DomainIndex]:
    grouped: dict[str, dict[str, list[RawSchema]]] = {}
    for raw in raws:
        grouped.setdefault(raw.domain, {}).setdefault(raw.name, []).append(raw)
    return {
        domain: _DomainIndex(
            versions={
                name: tuple(sorted(items, key=lambda r: r.since_version))
                for name, items in by_name.items()
            },
            latest=max(r.since_version for items in by_name.values() for r in items),
        )
        for domain, by_name in grouped.items()
    }


@functools.cache
def _onnx_index() -> dict[str, _DomainIndex]:
    index = _build(list(onnx_raw_schemas()))
    # opset versions of the domains as onnx declares them (can exceed the newest operator)
    declared = {"": onnx.defs.onnx_opset_version()}
    for domain, (_, newest) in onnx.onnx_cpp2py_export.defs.schema_version_map().items():
        name = normalize_domain(domain)
        declared[name] = max(declared.get(name, 0), newest)
    for domain, newest in declared.items():
        if domain in index:
            entry = index[domain]
            index[domain] = _DomainIndex(entry.versions, max(entry.latest, newest))
    return index


@functools.cache
def _onnxruntime_index() -> dict[str, _DomainIndex]:
    return _build(list(onnxruntime_raw_schemas(frozenset(_onnx_index()))))


def _domain_index(domain: str) -> _DomainIndex:
    index = _onnx_index().get(domain)
    if index is not None:
        return index
    index = _onnxruntime_index().get(domain)
    if index is not None:
        return index
    raise UnknownDomainError(
        f"unknown operator domain {domain!r}: the installed onnx and onnxruntime define "
        f"{', '.join(repr(d or 'ai.onnx') for d in known_domains())}",
        domain=domain,
    )


def known_domains() -> list[str]:
    """Every domain with schemas: ONNX ones first (the default domain as ""), then contrib."""
    return [*sorted(_onnx_index()), *sorted(_onnxruntime_index())]


# the standard ONNX domains: their operators are ONNX's ("" and "ai.onnx" are one domain)
ONNX_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})


@functools.cache
def _schema_domains() -> frozenset[str]:
    return ONNX_DOMAINS | frozenset(known_domains())


def is_custom_domain(domain: str) -> bool:
    """True for a domain without schemas here (TensorRT plugins, vendor ops): its operators
    are custom operators, drawn with a badge and reported by `check()` as warnings."""
    # ONNX's own domains first: only another domain needs onnxruntime's contrib schemas
    # (importing onnxruntime would slow every first drawing of a plain ONNX model)
    return domain not in ONNX_DOMAINS and domain not in _schema_domains()


def is_custom_operator(
    domain: str, op_type: str, overload: str, functions: Container[tuple[str, str, str]]
) -> bool:
    """True for a node of a custom domain that calls no local function: a call of one of
    `functions` (keys `(domain, name, overload)`) follows the function's signature instead."""
    return is_custom_domain(domain) and (domain, op_type, overload) not in functions


def latest_opset(domain: str = "") -> int:
    """Newest opset version of `domain` known to the installed onnx / onnxruntime."""
    return _domain_index(normalize_domain(domain)).latest


@functools.lru_cache(maxsize=8192)
def get_schema(
    op_type: str, domain: str = "", opset: int | None = None, *, allow_deprecated: bool = False
) -> OpSchemaInfo:
    """The schema of `op_type` as of `opset` of `domain` (latest version <= opset).

    `opset=None` means the latest. Deprecated operator versions (ONNX's way of removing an
    operator, e.g. Upsample from opset 10) raise `UnknownOperatorError` unless
    `allow_deprecated` is true; a document that opened such a model passes it to show the
    node anyway.
    """
    canonical = normalize_domain(domain)
    index = _domain_index(canonical)
    label = canonical or "ai.onnx"
    if opset is None:
        opset = index.latest
    if not isinstance(opset, int) or isinstance(opset, bool) or opset < 1:
        raise UnknownOperatorError(
            f"opset must be a positive int, got {opset!r}", op_type=op_type, domain=canonical
        )
    if opset > index.latest:
        raise UnknownOperatorError(
            f"opset {opset} of domain {label!r} is newer than the installed onnx/onnxruntime "
            f"support (latest {index.latest}): use opset {index.latest} or lower, or upgrade",
            op_type=op_type,
            domain=canonical,
        )
    versions = index.versions.get(op_type)
    if versions is None:
        raise UnknownOperatorError(
            _unknown_name_message(op_type, canonical, opset), op_type=op_type, domain=canonical
        )
    chosen = None
    for raw in versions:
        if raw.since_version <= opset:
            chosen = raw
    if chosen is None:
        first = versions[0].since_version
        raise UnknownOperatorError(
            f"operator {op_type!r} is not in opset {opset} of domain {label!r}: it was "
            f"introduced in opset {first}; import opset {first} or later",
            op_type=op_type,
            domain=canonical,
        )
    if chosen.deprecated and not allow_deprecated:
        raise UnknownOperatorError(
            _deprecated_message(op_type, label, opset, chosen, versions),
            op_type=op_type,
            domain=canonical,
        )
    return _converted(chosen)


_CONVERTED: dict[tuple[str, str, int], OpSchemaInfo] = {}


def _converted(raw: RawSchema) -> OpSchemaInfo:
    """One `OpSchemaInfo` per operator version, shared by every opset that resolves to it."""
    key = (raw.domain, raw.name, raw.since_version)
    info = _CONVERTED.get(key)
    if info is None:
        info = _CONVERTED[key] = convert(raw)
    return info


def _deprecated_message(
    op_type: str, label: str, opset: int, chosen: RawSchema, versions: tuple[RawSchema, ...]
) -> str:
    message = (
        f"operator {op_type!r} was removed (deprecated) in opset {chosen.since_version} of "
        f"domain {label!r}, so opset {opset} does not have it"
    )
    later = [r.since_version for r in versions if r.since_version > opset and not r.deprecated]
    fixes = []
    if op_type in _REPLACEMENTS:
        fixes.append(f"use {_REPLACEMENTS[op_type]!r}")
    if later:
        fixes.append(f"import opset {later[0]} or later, where it is defined again")
    earlier = [r.since_version for r in versions if r.since_version < chosen.since_version]
    if earlier:
        fixes.append(f"use opset {chosen.since_version - 1} or lower")
    return message + (": " + ", or ".join(fixes) if fixes else "")


def _unknown_name_message(op_type: str, domain: str, opset: int) -> str:
    label = domain or "ai.onnx"
    message = f"unknown operator {op_type!r} in domain {label!r} (opset {opset})"
    names = list(_domain_index(domain).versions)
    by_lower = {name.lower(): name for name in names}
    close = [by_lower[m] for m in difflib.get_close_matches(op_type.lower(), by_lower, n=3)]
    hints = []
    if close:
        hints.append("did you mean " + ", ".join(repr(c) for c in close) + "?")
    elsewhere = [
        other or "ai.onnx"
        for other in known_domains()
        if other != domain and op_type in _domain_index(other).versions
    ]
    if elsewhere:
        hints.append(
            "it exists in domain "
            + ", ".join(repr(d) for d in elsewhere)
            + ": import that domain and pass it as the node's domain"
        )
    return message + (": " + " ".join(hints) if hints else "")


def list_operators(
    opset_imports: Mapping[str, int], *, include_deprecated: bool = False
) -> list[OpSchemaInfo]:
    """Every operator available for these opset imports, each at its latest version <= the
    imported opset, sorted by domain then name. Domains unknown here (custom ops) are skipped.
    """
    normalized: dict[str, int] = {}
    for domain, version in opset_imports.items():
        normalized[normalize_domain(domain)] = int(version)
    key = tuple(sorted(normalized.items()))
    return list(_list_operators(key, include_deprecated))


@functools.lru_cache(maxsize=64)
def _list_operators(
    imports: tuple[tuple[str, int], ...], include_deprecated: bool
) -> tuple[OpSchemaInfo, ...]:
    result: list[OpSchemaInfo] = []
    for domain, opset in imports:
        try:
            index = _domain_index(domain)
        except UnknownDomainError:
            continue
        for name in sorted(index.versions):
            try:
                result.append(
                    get_schema(
                        name, domain, min(opset, index.latest), allow_deprecated=include_deprecated
                    )
                )
            except UnknownOperatorError:
                continue  # not yet introduced, or removed, at this opset
    return tuple(result)
