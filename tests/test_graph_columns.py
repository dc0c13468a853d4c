"""Binary columns: the wire format between nsdl_jupyter.graph and the browser."""

from __future__ import annotations

import numpy as np
import pytest

from nsdl_jupyter.graph import decode_columns, encode_columns


def test_round_trip_numeric_and_string_columns() -> None:
    buffer = encode_columns(
        {"version": 2, "ops": ["Conv"]},
        {
            "a": ("i4", np.array([1, -2, 3])),
            "b": ("u1", [0, 255]),
            "c": ("f4", [0.5, -1.25]),
            "names": ("strs", ["x", "/enc/layer.0/MatMul", "ünï"]),
            "none": ("strs", []),
        },
    )
    meta, columns = decode_columns(buffer)
    assert meta == {"version": 2, "ops": ["Conv"]}
    assert columns["a"].tolist() == [1, -2, 3]
    assert columns["b"].tolist() == [0, 255]
    assert columns["c"].tolist() == [0.5, -1.25]
    assert columns["names"] == ["x", "/enc/layer.0/MatMul", "ünï"]
    assert columns["none"] == []


def test_columns_are_eight_byte_aligned_for_zero_copy_typed_arrays() -> None:
    buffer = encode_columns(
        {}, {"s": ("strs", ["abc"]), "f": ("f8", [1.0]), "i": ("i4", [1, 2, 3])}
    )
    meta_end = 8 + int.from_bytes(buffer[4:8], "little")
    data_start = meta_end + (-meta_end % 8)
    assert data_start % 8 == 0
    import json

    header = json.loads(buffer[8:meta_end])
    assert all(entry["offset"] % 8 == 0 for entry in header["columns"])


def test_rejects_nul_in_strings_and_unknown_dtypes() -> None:
    with pytest.raises(ValueError, match="NUL"):
        encode_columns({}, {"s": ("strs", ["a\0b"])})
    with pytest.raises(ValueError, match="unknown dtype"):
        encode_columns({}, {"s": ("i8", [1])})
    with pytest.raises(ValueError, match="NSC1"):
        decode_columns(b"nope0000")


def test_shared_prefix_and_distinct_string_columns_round_trip() -> None:
    paths = [
        "/encoder/layer.0/attention/MatMul",
        "/encoder/layer.0/attention/MatMul_output_0",
        "encoder.layer.0.weight",
        "",
        "/encoder/layer.0/attention/Add",
        "ünï/ä" + "x" * 100,  # longer than the bytes compared: the rest is sent whole
        "ünï/ä" + "x" * 99 + "y",
        "\U0001f600a",  # a shared prefix may end inside a UTF-8 character
        "\U0001f600b",
    ]
    captions = ["Add", "Conv conv1", "Add", "", *(str(k) for k in range(300))]
    buffer = encode_columns(
        {},
        {
            "paths": ("pstrs", paths),
            "one": ("pstrs", ["x"]),
            "captions": ("dstrs", captions),
            "none": ("dstrs", []),
            "codes": ("u2", [0, 65535]),
        },
    )
    _meta, columns = decode_columns(buffer)
    assert columns["paths"] == paths
    assert columns["one"] == ["x"]
    assert columns["captions"] == captions
    assert columns["none"] == []
    assert columns["codes"].tolist() == [0, 65535]
    names = [f"/encoder/layer.{k}/attention/{op}" for k in range(200) for op in ("MatMul", "Add")]
    plain = encode_columns({}, {"names": ("strs", names)})
    assert len(encode_columns({}, {"names": ("pstrs", names)})) < len(plain) / 2
    with pytest.raises(ValueError, match="NUL"):
        encode_columns({}, {"s": ("pstrs", ["a", "a\0b"])})
