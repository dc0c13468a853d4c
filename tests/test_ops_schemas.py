"""Schemas: every ONNX operator of every opset resolves; contrib schemas from onnxruntime."""

from __future__ import annotations

import timeit

import onnx
import onnx_ir as ir
import pytest

from nsdl_jupyter.ops import (
    OpSchemaInfo,
    UnknownDomainError,
    UnknownOperatorError,
    get_schema,
    known_domains,
    latest_opset,
    list_operators,
)
from nsdl_jupyter.ops._categories import CATEGORIES, DEFAULT_DOMAIN_CATEGORY

ONNX_SCHEMAS = onnx.defs.get_all_schemas_with_history()
ONNX_DOMAINS = sorted({"" if s.domain == "ai.onnx" else s.domain for s in ONNX_SCHEMAS})


def _versions(domain: str) -> dict[str, list[onnx.defs.OpSchema]]:
    found: dict[str, list[onnx.defs.OpSchema]] = {}
    for schema in ONNX_SCHEMAS:
        if schema.domain == domain:
            found.setdefault(schema.name, []).append(schema)
    return {n: sorted(v, key=lambda s: s.since_version) for n, v in found.items()}


def _check_defaults(
    info: OpSchemaInfo, attributes: dict[str, onnx.defs.OpSchema.Attribute]
) -> None:
    assert set(info.attributes) == set(attributes)
    for name, attr in attributes.items():
        got = info.attributes[name]
        assert got.type == ir.AttributeType(attr.type.value)
        assert got.required == attr.required
        expected = attr.default_value
        if expected.type == onnx.AttributeProto.UNDEFINED:
            assert got.default is None
            continue
        assert got.default is not None, f"{info.name}.{name}"
        assert got.default.name == name
        assert got.default.type == got.type
        # the converted default serializes back to the schema's own proto
        back = ir.serde.serialize_attribute(got.default)
        assert back.SerializeToString(deterministic=True) == expected.SerializeToString(
            deterministic=True
        ), f"{info.name}.{name}"
        fresh = got.fresh_default()
        assert fresh is not None
        assert fresh is not got.default
        assert fresh.value == got.default.value or got.type == ir.AttributeType.TENSOR


@pytest.mark.parametrize("domain", ONNX_DOMAINS)
def test_every_onnx_schema_of_every_opset_resolves(domain: str) -> None:
    versions = _versions(domain)
    resolved = 0
    for opset in range(1, latest_opset(domain) + 1):
        for name, history in versions.items():
            expected = [s for s in history if s.since_version <= opset]
            if not expected:
                with pytest.raises(UnknownOperatorError, match="introduced in opset"):
                    get_schema(name, domain, opset)
                continue
            want = expected[-1]
            info = get_schema(name, domain, opset, allow_deprecated=True)
            assert (info.name, info.since_version) == (name, want.since_version)
            assert info.deprecated == want.deprecated
            assert info.domain == domain
            assert info.min_input == want.min_input
            assert info.max_output == want.max_output
            assert len(info.inputs) == len(want.inputs)
            assert info.category in CATEGORIES
            if want.deprecated:
                with pytest.raises(UnknownOperatorError, match="removed"):
                    get_schema(name, domain, opset)
            if want.since_version == opset:
                _check_defaults(info, dict(want.attributes))
            resolved += 1
    assert resolved > 0


def test_default_domain_aliases() -> None:
    assert get_schema("Relu", "ai.onnx", 14) is get_schema("Relu", "", 14)
    assert latest_opset("ai.onnx") == latest_opset("") == onnx.defs.onnx_opset_version()


def test_every_default_domain_operator_has_a_category() -> None:
    """A new onnx release with new operators fails here until the table gets them."""
    names = {s.name for s in ONNX_SCHEMAS if s.domain == ""}
    missing = sorted(names - set(DEFAULT_DOMAIN_CATEGORY))
    assert not missing, f"add these to nsdl_jupyter/ops/_categories.py: {missing}"
    assert set(DEFAULT_DOMAIN_CATEGORY.values()) <= set(CATEGORIES)


def test_schema_fields() -> None:
    conv = get_schema("Conv", "", 21)
    assert (conv.since_version, conv.category, conv.source) == (11, "Convolution", "onnx")
    assert conv.doc.startswith("The convolution operator consumes an input tensor")
    assert "\n" not in conv.doc
    assert [p.name for p in conv.inputs] == ["X", "W", "B"]
    assert [p.option for p in conv.inputs] == ["single", "single", "optional"]
    assert conv.type_constraints["T"] == ("tensor(float16)", "tensor(float)", "tensor(double)")
    auto_pad = conv.attributes["auto_pad"]
    assert auto_pad.default is not None
    assert auto_pad.default.value == "NOTSET"
    assert conv.attributes["kernel_shape"].default is None
    assert conv.attributes["kernel_shape"].type == ir.AttributeType.INTS
    assert conv.required_attributes == ()
    concat = get_schema("Concat", "", 13)
    assert concat.inputs[0].option == "variadic"
    assert concat.max_input == 2147483647
    assert concat.required_attributes == ("axis",)
    assert get_schema("LayerNormalization", "", 17).has_function
    assert not get_schema("Conv", "", 21).has_function
    assert get_schema("Gelu", "", 20).category == "Activation"
    assert get_schema("LinearRegressor", "ai.onnx.ml", 1).category == "Traditional ML"
    with pytest.raises(TypeError):
        hash(conv.attributes)
    assert hash(conv) == hash(get_schema("Conv", "", 11))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            ("Conv2d", "", 21),
            "unknown operator 'Conv2d' in domain 'ai.onnx' (opset 21): did you mean 'Conv'",
        ),
        (("relu", "", 21), "did you mean 'Relu'"),
        (("Gelu", "", 19), "introduced in opset 20; import opset 20 or later"),
        (
            ("Upsample", "", 13),
            "removed (deprecated) in opset 10 of domain 'ai.onnx', so opset 13 does not have it: "
            "use 'Resize', or use opset 9 or lower",
        ),
        (("GroupNormalization", "", 19), "import opset 21 or later, where it is defined again"),
        (("FusedConv", "", 21), "it exists in domain 'com.microsoft'"),
        (("Conv", "", 999), "newer than the installed onnx/onnxruntime support"),
        (("Conv", "", 0), "opset must be a positive int"),
    ],
)
def test_unknown_operator_messages(args: tuple[str, str, int], fragment: str) -> None:
    with pytest.raises(UnknownOperatorError) as info:
        get_schema(*args)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, KeyError)


def test_unknown_domain() -> None:
    with pytest.raises(
        UnknownDomainError, match=r"unknown operator domain 'my\.custom'.*'com\.microsoft'"
    ):
        get_schema("Foo", "my.custom", 1)
    with pytest.raises(UnknownDomainError):
        latest_opset("my.custom")


def test_deprecated_schema_available_on_request() -> None:
    upsample = get_schema("Upsample", "", 13, allow_deprecated=True)
    assert upsample.deprecated
    assert upsample.since_version == 10
    assert get_schema("Upsample", "", 9).deprecated is False


def test_list_operators_default_domain() -> None:
    ops = list_operators({"": 21})
    names = [op.name for op in ops]
    assert names == sorted(names)
    assert len(names) == len(set(names))
    assert {"Conv", "Gelu", "Relu", "LayerNormalization"} <= set(names)
    assert "Attention" not in names  # opset 23
    assert "Upsample" not in names  # deprecated
    assert all(op.since_version <= 21 and not op.deprecated for op in ops)
    expected = {s.name for s in ONNX_SCHEMAS if s.domain == "" and s.since_version <= 21} - {
        "Upsample",
        "Scatter",
        "GroupNormalization",
    }
    assert set(names) == expected | {"GroupNormalization"}  # defined again at 21
    assert "Upsample" in {op.name for op in list_operators({"": 21}, include_deprecated=True)}
    assert [op.name for op in list_operators({"ai.onnx": 21})] == names
    assert list_operators({"": 1})  # the oldest opset has operators too


def test_list_operators_skips_unknown_domains_and_clamps() -> None:
    ops = list_operators({"": 13, "my.custom": 1})
    assert {op.domain for op in ops} == {""}
    # an ONNX-ML opset above the latest still lists the latest versions
    ml = list_operators({"ai.onnx.ml": 99})
    assert ml
    assert {op.domain for op in ml} == {"ai.onnx.ml"}


def test_contrib_schemas_from_onnxruntime() -> None:
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

    ort_names = {s.name for s in ort_state.get_all_operator_schema() if s.domain == "com.microsoft"}
    assert ort_names, "this onnxruntime build exposes no contrib schemas"
    assert "com.microsoft" in known_domains()
    assert latest_opset("com.microsoft") >= 1
    ops = list_operators({"": 21, "com.microsoft": 1})
    contrib = [op for op in ops if op.domain == "com.microsoft"]
    assert {op.name for op in contrib} == ort_names
    assert all(op.category == "Contrib" and op.source == "onnxruntime" for op in contrib)
    attention = get_schema("Attention", "com.microsoft", 1)
    assert attention.attributes["num_heads"].required
    assert attention.attributes["num_heads"].type == ir.AttributeType.INT
    default = attention.attributes["unidirectional"].default
    assert default is not None
    assert (default.name, default.value) == ("unidirectional", 0)
    assert attention.inputs[2].option == "optional"
    assert attention.doc.startswith("Multi-Head Attention")
    # every contrib default converts and serializes again
    for op in contrib:
        for attr in op.attributes.values():
            if attr.default is not None:
                assert attr.default.type == attr.type
                ir.serde.serialize_attribute(attr.default)


def test_cached_get_schema_latency() -> None:
    get_schema("Conv", "", 21)
    number = 20000
    seconds = timeit.timeit(lambda: get_schema("Conv", "", 21), number=number)
    print(f"\ncached get_schema: {seconds / number * 1e6:.2f} us per call (target < 20 us)")
    assert get_schema("Conv", "", 21) is get_schema("Conv", "", 21)
