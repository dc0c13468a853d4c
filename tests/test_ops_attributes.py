"""to_attribute / attribute_to_python for every ONNX attribute type, and their errors."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from nsdl_jupyter.ops import (
    AttributeLiteralError,
    AttributeReference,
    AttributeValueError,
    LiteralSyntaxError,
    attribute_to_python,
    format_literal,
    get_schema,
    latest_opset,
    list_operators,
    to_attribute,
)

AT = ir.AttributeType


def serialized(attr: ir.Attr) -> bytes:
    return ir.serde.serialize_attribute(attr).SerializeToString(deterministic=True)


# ------------------------------------------------------------------------------ valid values


@pytest.mark.parametrize(
    ("attr_type", "value", "expected"),
    [
        (AT.INT, 3, 3),
        (AT.INT, "3", 3),
        (AT.INT, " -7 ", -7),
        (AT.INT, True, 1),
        (AT.INT, "false", 0),
        (AT.INT, 2.0, 2),
        (AT.INT, np.int32(5), 5),
        (AT.INT, np.array(6), 6),
        (AT.INT, 2**63 - 1, 2**63 - 1),
        (AT.FLOAT, 0.5, 0.5),
        (AT.FLOAT, "1.5e-3", float(np.float32(1.5e-3))),
        (AT.FLOAT, 2, 2.0),
        (AT.FLOAT, "-inf", -np.inf),
        (AT.FLOAT, np.float16(0.25), 0.25),
        (AT.FLOAT, "3.4028235e+38", float(np.finfo(np.float32).max)),
        (AT.STRING, "NOTSET", "NOTSET"),
        (AT.STRING, "'It\\'s alive!'", "It's alive!"),
        (AT.STRING, '"double"', "double"),
        (AT.STRING, "plain text with 'quotes' inside", "plain text with 'quotes' inside"),
        (AT.STRING, b"bytes", "bytes"),
        (AT.STRING, "", ""),
        (AT.STRING, "[1]", "[1]"),
        (AT.INTS, [1, 2, 3], (1, 2, 3)),
        (AT.INTS, "[1, 2, 3]", (1, 2, 3)),
        (AT.INTS, (4,), (4,)),
        (AT.INTS, np.array([1, 2], dtype=np.int32), (1, 2)),
        (AT.INTS, "[]", ()),
        (AT.INTS, [1.0, True], (1, 1)),
        (AT.FLOATS, "[0.5, 1, -inf]", (0.5, 1.0, -np.inf)),
        (AT.FLOATS, np.array([0.1], dtype=np.float32), (float(np.float32(0.1)),)),
        (AT.STRINGS, "['a', \"b\"]", ("a", "b")),
        (AT.STRINGS, ["x", b"y"], ("x", "y")),
        (AT.STRINGS, np.array(["u", "v"]), ("u", "v")),
    ],
)
def test_scalar_and_list_types(
    attr_type: ir.AttributeType, value: object, expected: object
) -> None:
    attr = to_attribute("a", value, attr_type)
    assert (attr.name, attr.type) == ("a", attr_type)
    assert attr.value == expected
    serialized(attr)  # it is a valid attribute


@pytest.mark.parametrize(
    ("value", "dtype", "shape", "values"),
    [
        ("[[1, 2], [3, 4]]", np.int64, (2, 2), [[1, 2], [3, 4]]),
        ("[[1.0, 2], [3, 4]]", np.float32, (2, 2), [[1, 2], [3, 4]]),
        ("1.5", np.float32, (), 1.5),
        ("7", np.int64, (), 7),
        ("[true, false]", np.bool_, (2,), [True, False]),
        ("[]", np.float32, (0,), []),
        ("[[], []]", np.float32, (2, 0), np.zeros((2, 0))),
        ([[1, 2, 3]], np.int64, (1, 3), [[1, 2, 3]]),
        (
            np.arange(6, dtype=np.float16).reshape(2, 3),
            np.float16,
            (2, 3),
            np.arange(6).reshape(2, 3),
        ),
        (np.array([1, 2], dtype=np.uint8), np.uint8, (2,), [1, 2]),
        (np.float64(2.5), np.float64, (), 2.5),
        (
            onnx.numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float64)),
            np.float64,
            (2,),
            [1, 2],
        ),
    ],
)
def test_tensor_values(value: object, dtype: type, shape: tuple[int, ...], values: object) -> None:
    attr = to_attribute("value", value, AT.TENSOR)
    array = attribute_to_python(attr)
    assert isinstance(array, np.ndarray)
    assert array.dtype == dtype
    assert array.shape == shape
    np.testing.assert_array_equal(array, np.asarray(values, dtype=dtype))
    serialized(attr)


def test_string_tensor() -> None:
    attr = to_attribute("value", "[['a', 'b\\'c'], ['d', 'é']]", AT.TENSOR)
    assert attr.value.dtype == ir.DataType.STRING
    back = attribute_to_python(attr)
    assert isinstance(back, np.ndarray)
    assert back.tolist() == [["a", "b'c"], ["d", "é"]]
    proto = ir.serde.serialize_attribute(attr)
    assert list(proto.t.string_data) == [b"a", b"b'c", b"d", "é".encode()]
    assert list(proto.t.dims) == [2, 2]
    assert to_attribute("value", np.array(["x", "y"]), AT.TENSOR).value.dtype == ir.DataType.STRING


def test_tensor_objects_are_kept() -> None:
    tensor = ir.tensor(np.array([1, 2], dtype=np.int16))
    assert to_attribute("value", tensor, AT.TENSOR).value is tensor


def test_tensors() -> None:
    attr = to_attribute("ts", "[[1, 2], [3.5], 'x']", AT.TENSORS)
    arrays = attribute_to_python(attr)
    assert isinstance(arrays, list)
    assert [a.dtype for a in arrays] == [np.int64, np.float32, object]
    assert [a.tolist() for a in arrays] == [[1, 2], [3.5], "x"]
    serialized(attr)


def test_graph_and_type_objects() -> None:
    graph = ir.Graph([], [], nodes=[], name="body")
    attr = to_attribute("body", graph, AT.GRAPH)
    assert attribute_to_python(attr) is graph
    assert attribute_to_python(to_attribute("bodies", [graph], AT.GRAPHS)) == [graph]
    float_type = ir.TensorType(ir.DataType.FLOAT)
    typed = to_attribute("type", float_type, AT.TYPE_PROTO)
    back = attribute_to_python(typed)
    assert isinstance(back, ir.TypeAndShape)
    assert back.type == float_type
    serialized(typed)
    several = to_attribute("types", [float_type, ir.TypeAndShape(float_type, None)], AT.TYPE_PROTOS)
    assert len(several.value) == 2
    assert format_literal(graph) == "<graph 'body': 0 nodes>"


def test_existing_attr_and_references() -> None:
    source = ir.AttrInt64("old", 4)
    copied = to_attribute("new", source, AT.INT)
    assert (copied.name, copied.value) == ("new", 4)
    assert copied is not source
    converted = to_attribute("f", source, AT.FLOAT)
    assert (converted.type, converted.value) == (AT.FLOAT, 4.0)
    ref = to_attribute("alpha", AttributeReference("my_alpha", AT.FLOAT), AT.FLOAT)
    assert ref.is_ref()
    assert ref.ref_attr_name == "my_alpha"
    back = attribute_to_python(ref)
    assert back == AttributeReference("my_alpha", AT.FLOAT)
    assert to_attribute("beta", ref, AT.FLOAT).ref_attr_name == "my_alpha"


def test_float_display_round_trips_float32_bits() -> None:
    attr = to_attribute("alpha", "0.1", AT.FLOAT)
    assert attr.value == float(np.float32(0.1))
    shown = attribute_to_python(attr)
    assert shown == 0.1
    assert format_literal(shown) == "0.1"
    assert to_attribute("alpha", format_literal(shown), AT.FLOAT).value == attr.value


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("attr_type", "value", "message"),
    [
        (
            AT.INT,
            1.5,
            "attribute 'a' expects INT (an int, e.g. 1): got the float 1.5, not a whole number",
        ),
        (AT.INT, "x", None),
        (AT.INT, [1], "attribute 'a' expects INT (an int, e.g. 1): got the list [1]"),
        (AT.INT, 2**63, "which does not fit in int64"),
        (AT.INT, float("nan"), "not a whole number"),
        (AT.INT, None, "got None"),
        (AT.FLOAT, "yes", None),
        (AT.FLOAT, True, "attribute 'a' expects FLOAT (a float, e.g. 0.5): got the bool true"),
        (AT.FLOAT, 1e39, "outside the float32 range"),
        (AT.FLOAT, -3.5e38, "outside the float32 range"),
        (AT.FLOAT, "abc", None),
        (AT.STRING, 5, "attribute 'a' expects STRING (a string, e.g. 'text'): got the int 5"),
        (AT.STRING, "'unterminated", None),
        (AT.STRING, b"\xff", "bytes that are not UTF-8 text"),
        (AT.INTS, 5, "got the int 5; write it in brackets for a one-item list"),
        (AT.INTS, [1, "x"], "item 2 is the str 'x'"),
        (AT.INTS, [[1, 2]], "item 1 is the list [1, 2]"),
        (AT.INTS, np.zeros((2, 2)), "a list attribute needs one dimension"),
        (AT.FLOATS, ["a"], "item 1 is the str 'a'"),
        (AT.STRINGS, [1], "item 1 is the int 1"),
        (AT.STRINGS, "a", "column 1: unknown word 'a'"),
        (AT.STRINGS, "'a'", "column 1: got the str 'a'; write it in brackets"),
        (AT.TENSOR, [[1, 2], [3]], "ragged list: item 2 has shape (1,) but item 1 has shape (2,)"),
        (AT.TENSOR, [1, [2]], "item 2 is a list but item 1 is a single value"),
        (AT.TENSOR, [1, "a"], "item 2 is a string but earlier items are numbers"),
        (AT.TENSOR, [True, 1], "item 2 is a number but earlier items are true/false"),
        (AT.TENSOR, [2**64], "does not fit in int64"),
        (AT.TENSOR, [1e39], "outside the float32 range"),
        (AT.TENSOR, [None], "item 1 is None"),
        (AT.TENSOR, {"a": 1}, "got a builtins.dict"),
        (AT.TENSOR, np.array([None, 1]), "an object array must hold strings"),
        (AT.TENSORS, 5, "write a list of tensors"),
        (AT.TENSORS, [[1], [[1], 2]], "item 2: ragged list"),
        (AT.GRAPH, "graph text", "it cannot be typed as literal text; build an onnx_ir.Graph"),
        (AT.GRAPH, onnx.GraphProto(), "convert it with onnx_ir.serde.deserialize_graph"),
        (AT.GRAPHS, [1], "item 1 is the int 1"),
        (AT.TYPE_PROTO, "float", "cannot be typed as literal text"),
        (AT.TYPE_PROTO, 1, "got the int 1"),
        (AT.TYPE_PROTOS, [1], "item 1 is the int 1"),
        (AT.SPARSE_TENSOR, "[1]", "cannot be typed as literal text"),
        (AT.SPARSE_TENSOR, np.zeros(2), "expects SPARSE_TENSOR (an onnx.SparseTensorProto)"),
        (AT.SPARSE_TENSOR, onnx.SparseTensorProto(), "cannot store sparse tensor attributes"),
        (AT.SPARSE_TENSORS, [onnx.SparseTensorProto()], "cannot store sparse tensor attributes"),
        (AT.UNDEFINED, 1, "has type UNDEFINED, which holds no value"),
        (99, 1, "99 is not an ONNX attribute type"),
    ],
)
def test_errors_name_attribute_type_and_value(
    attr_type: ir.AttributeType, value: object, message: str | None
) -> None:
    with pytest.raises(AttributeValueError) as info:
        to_attribute("a", value, attr_type)
    text = str(info.value)
    assert text.startswith("attribute 'a'")
    if message is not None:
        assert message in text
    assert info.value.attribute == "a"


@pytest.mark.parametrize(
    ("attr_type", "text", "column", "fragment"),
    [
        (AT.INTS, "[1, 2", 6, "expected ',' or ']', got end of text"),
        (AT.INTS, "[1, 2, 'x']", 8, "item 3 is the str 'x'"),
        (AT.INTS, "[1, 2.5]", 5, "item 2 is the float 2.5, not a whole number"),
        (AT.INT, "abc", 1, "unknown word 'abc'"),
        (AT.INT, "  1.5", 3, "not a whole number"),
        (AT.FLOATS, "[0.5, 'x']", 7, "item 2 is the str 'x'"),
        (AT.STRINGS, "['a', 2]", 7, "item 2 is the int 2"),
        (AT.STRING, "'It\\'s", 1, "unterminated string"),
        (AT.TENSOR, "[[1, 2], [3]]", 10, "ragged list"),
        (AT.TENSOR, "[[1, 2],\n [3, 'x']]", 15, "item 2 is a string"),
        (AT.TENSORS, "[[1], [[1], 2]]", 13, "item 2: ragged list"),
    ],
)
def test_literal_errors_carry_the_column(
    attr_type: ir.AttributeType, text: str, column: int, fragment: str
) -> None:
    with pytest.raises(AttributeLiteralError) as info:
        to_attribute("pads", text, attr_type)
    error = info.value
    assert isinstance(error, AttributeValueError)
    assert isinstance(error, LiteralSyntaxError)
    assert error.column == column
    assert fragment in str(error)
    assert str(error).startswith(f"attribute 'pads' expects {attr_type.name} (")
    where = f"line {error.line}, column {error.line_column}" if "\n" in text else f"column {column}"
    assert f": {where}: " in str(error)


# ------------------------------------------------------------------------------ round trips


def _all_defaults() -> list[tuple[str, ir.Attr]]:
    found = []
    imports = {"": latest_opset(""), "ai.onnx.ml": latest_opset("ai.onnx.ml"), "com.microsoft": 1}
    for opset in range(1, latest_opset("") + 1):
        imports[""] = opset
        for schema in list_operators(imports):
            for info in schema.attributes.values():
                if info.default is not None:
                    found.append((f"{schema.qualified_name}-{schema.since_version}", info.default))
    return found


def test_every_schema_default_round_trips_through_python_and_text() -> None:
    checked = 0
    for where, default in _all_defaults():
        python = attribute_to_python(default)
        again = to_attribute(default.name, python, default.type)
        assert serialized(again) == serialized(default), where
        if default.type in (AT.GRAPH, AT.GRAPHS, AT.TYPE_PROTO, AT.TYPE_PROTOS):
            continue
        from_text = to_attribute(default.name, format_literal(python), default.type)
        if default.type == AT.TENSOR:
            # literal text carries no dtype: int tensors come back int64, float ones float32
            np.testing.assert_array_equal(from_text.value.numpy(), python)
        else:
            assert serialized(from_text) == serialized(default), where
        checked += 1
    assert checked > 500


def test_attribute_values_of_a_node_round_trip() -> None:
    node = ir.node(
        "Foo",
        [],
        attributes={
            "i": 3,
            "f": 0.3,
            "s": "text",
            "ints": [1, 2],
            "floats": [0.1, 0.2],
            "strings": ["a", "b"],
            "t": ir.tensor(np.array([[0.1, 0.2]], dtype=np.float32)),
        },
    )
    for attr in node.attributes.values():
        python = attribute_to_python(attr)
        assert serialized(to_attribute(attr.name, python, attr.type)) == serialized(attr)
        assert serialized(to_attribute(attr.name, format_literal(python), attr.type)) == (
            serialized(attr)
        )


def test_tensor_display_is_read_only() -> None:
    attr = to_attribute("value", np.zeros(3, dtype=np.float32), AT.TENSOR)
    array = attribute_to_python(attr)
    assert isinstance(array, np.ndarray)
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 1


# ------------------------------------------------------------------------------ real runtime


def test_converted_attributes_run_in_onnxruntime() -> None:
    """Attributes made from literal text build a model that onnxruntime runs correctly."""
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([2, 3]))
    opset = 17
    constant = ir.node("Constant", [], attributes={}, name="c")
    constant.attributes["value"] = to_attribute("value", "[[1.0, 2, 3], [4, 5, 6]]", AT.TENSOR)
    add = ir.node("Add", [x, constant.outputs[0]], name="add")
    leaky = ir.node("LeakyRelu", [add.outputs[0]], name="leaky")
    leaky.attributes["alpha"] = to_attribute("alpha", "0.1", AT.FLOAT)
    transpose = ir.node("Transpose", [leaky.outputs[0]], name="transpose")
    transpose.attributes["perm"] = to_attribute("perm", "[1, 0]", AT.INTS)
    for node in (constant, add, leaky, transpose):
        get_schema(node.op_type, "", opset)  # every operator is known at this opset
    out = transpose.outputs[0]
    out.name = "y"
    out.type = ir.TensorType(ir.DataType.FLOAT)
    out.shape = ir.Shape([3, 2])
    graph = ir.Graph(
        [x], [out], nodes=[constant, add, leaky, transpose], opset_imports={"": opset}, name="g"
    )
    model = ir.serde.serialize_model(ir.Model(graph, ir_version=8))
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    data = np.array([[-10, 0, 1], [-20, 2, 3]], dtype=np.float32)
    (result,) = session.run(None, {"x": data})
    summed = data + np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    expected = np.where(summed > 0, summed, np.float32(0.1) * summed).T
    np.testing.assert_allclose(result, expected, rtol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        st.sampled_from([np.float32, np.int64, np.bool_]),
        array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        elements={"allow_nan": False},
    )
)
def test_tensor_literal_round_trip(array: np.ndarray) -> None:
    """A tensor written by format_literal and typed back gives the same values and dtype."""
    if array.size == 0 and array.dtype != np.float32:
        return  # an empty literal carries no dtype: it reads back as float32
    if 0 in array.shape[:-1]:
        return  # "[]" cannot say (0, 3): a literal has no inner dims without items
    attr = to_attribute("value", format_literal(array), AT.TENSOR)
    back = attribute_to_python(attr)
    assert isinstance(back, np.ndarray)
    assert back.dtype == array.dtype
    assert back.shape == array.shape
    np.testing.assert_array_equal(back, array)
