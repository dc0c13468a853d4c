"""Binary column container: how bulk graph data crosses the wire to the browser.

Layout of one buffer (little endian), decoded by `js/src/graph_view/columns.ts`::

    b"NSC1" | uint32 header_len | header (UTF-8 JSON) | zero padding to 8 | column data

The header is ``{"meta": {...}, "columns": [{"name", "dtype", "offset", "length"}, ...]}``;
offsets are relative to the start of the data and 8-byte aligned, so the browser wraps each
column in a typed array without copying. ``dtype`` is a numpy-style code (``u1 i4 u4 f4 f8``)
or ``strs``: strings joined by NUL and UTF-8 encoded, split once in the browser.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nsdl_jupyter.graph._errors import GraphDataError

MAGIC = b"NSC1"
_NUMERIC = {"u1": np.uint8, "i4": np.int32, "u4": np.uint32, "f4": np.float32, "f8": np.float64}

Column = npt.NDArray[Any] | Sequence[Any]


def _pad8(n: int) -> int:
    return (8 - n % 8) % 8


def encode_columns(meta: Mapping[str, Any], columns: Mapping[str, tuple[str, Column]]) -> bytes:
    """Pack `columns` ({name: (dtype, values)}) and a JSON-able `meta` into one buffer."""
    chunks: list[bytes] = []
    entries: list[dict[str, Any]] = []
    offset = 0
    for name, (dtype, values) in columns.items():
        if dtype == "strs":
            strings = list(values)
            joined = "\0".join(strings)
            if joined.count("\0") != max(len(strings) - 1, 0):  # one scan, not one per string
                raise GraphDataError(f"column {name!r}: strings may not contain NUL characters")
            raw = joined.encode()
            length = len(strings)
        elif dtype in _NUMERIC:
            array = np.ascontiguousarray(np.asarray(values, dtype=_NUMERIC[dtype]))
            raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
            length = int(array.shape[0])
        else:
            raise GraphDataError(f"column {name!r}: unknown dtype {dtype!r}")
        entries.append(
            {"name": name, "dtype": dtype, "offset": offset, "length": length, "bytes": len(raw)}
        )
        chunks.append(raw + b"\0" * _pad8(len(raw)))
        offset += len(raw) + _pad8(len(raw))
    header = json.dumps({"meta": meta, "columns": entries}, separators=(",", ":")).encode()
    head = MAGIC + struct.pack("<I", len(header)) + header
    return head + b"\0" * _pad8(len(head)) + b"".join(chunks)


def decode_columns(buffer: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inverse of `encode_columns` (tests and the SVG export read buffers back with it)."""
    if buffer[:4] != MAGIC:
        raise GraphDataError("not an NSC1 column buffer")
    (header_len,) = struct.unpack_from("<I", buffer, 4)
    header = json.loads(buffer[8 : 8 + header_len])
    start = 8 + header_len + _pad8(8 + header_len)
    columns: dict[str, Any] = {}
    for entry in header["columns"]:
        begin = start + entry["offset"]
        raw = buffer[begin : begin + entry["bytes"]]
        if entry["dtype"] == "strs":
            columns[entry["name"]] = raw.decode().split("\0") if entry["length"] else []
        else:
            columns[entry["name"]] = np.frombuffer(
                raw, dtype=np.dtype(entry["dtype"]).newbyteorder("<")
            )
    return header["meta"], columns
