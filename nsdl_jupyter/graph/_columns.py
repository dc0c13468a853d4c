"""Binary column container: how bulk graph data crosses the wire to the browser.

Layout of one buffer (little endian), decoded by `js/src/graph_view/columns.ts`::

    b"NSC1" | uint32 header_len | header (UTF-8 JSON) | zero padding to 8 | column data

The header is ``{"meta": {...}, "columns": [{"name", "dtype", "offset", "length"}, ...]}``;
offsets are relative to the start of the data and 8-byte aligned, so the browser wraps each
column in a typed array without copying. ``dtype`` is a numpy-style code (``u1 u2 i4 u4 f4 f8``)
or one of three string encodings, all decoded to a list of strings:

- ``strs``: the strings joined by NUL, UTF-8 encoded, split once in the browser;
- ``dstrs`` (few distinct values, op captions): uint32 count of distinct strings, one code per
  string (u1, u2 or u4 by that count), zero padding to 4, then the distinct strings as ``strs``;
- ``pstrs`` (paths sharing prefixes, ``/encoder/layer.3/attention/MatMul``): one uint16 per
  string, ``(back - 1) << 13 | shared``: the first `shared` UTF-8 bytes equal those of the
  string `back` (1..8; the encoder looks 4 back) places earlier; then every string's
  remaining bytes, each ended by NUL. A 100,000-node graph's names shrink 3x, its tensor
  names 2x.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nsdl_jupyter.graph._errors import GraphDataError

MAGIC = b"NSC1"
_NUMERIC = {
    "u1": np.uint8,
    "u2": np.uint16,
    "i4": np.int32,
    "u4": np.uint32,
    "f4": np.float32,
    "f8": np.float64,
}
# pstrs: how far back a shared prefix is looked for, and its longest length (13 bits)
PREFIX_WINDOW, PREFIX_MAX = 4, (1 << 13) - 1  # the format allows a window of 8
_PREFIX_WIDTH = 64  # bytes compared per string (a multiple of 8: compared as uint64 words)

Column = npt.NDArray[Any] | Sequence[Any]


def _pad8(n: int) -> int:
    return (8 - n % 8) % 8


def code_dtype(distinct: int) -> str:
    """The narrowest unsigned dtype for codes into a table of `distinct` entries."""
    return "u1" if distinct <= 1 << 8 else "u2" if distinct <= 1 << 16 else "u4"


def _joined(name: str, strings: Sequence[str]) -> bytes:
    joined = "\0".join(strings)
    if joined.count("\0") != max(len(strings) - 1, 0):  # one scan, not one per string
        raise GraphDataError(f"column {name!r}: strings may not contain NUL characters")
    return joined.encode()


def _distinct_strings(name: str, strings: Sequence[str]) -> bytes:
    table: dict[str, int] = {}
    codes = np.fromiter(
        (table.setdefault(s, len(table)) for s in strings), dtype=np.uint32, count=len(strings)
    )
    width = np.dtype(_NUMERIC[code_dtype(len(table))]).newbyteorder("<")
    head = struct.pack("<I", len(table)) + codes.astype(width).tobytes()
    return head + b"\0" * (-len(head) % 4) + _joined(name, list(table))


def _shared_prefixes(encoded: list[bytes]) -> npt.NDArray[np.uint16]:
    """Per string, ``(back - 1) << 13 | shared`` for the longest prefix it shares with one of
    the PREFIX_WINDOW strings before it (compared on their first _PREFIX_WIDTH bytes)."""
    n = len(encoded)
    words = _PREFIX_WIDTH // 8
    # fixed-width bytes (longer ones cut, shorter ones padded with NUL), read as uint64 words
    fixed = np.array(encoded, dtype=f"S{_PREFIX_WIDTH}").view("<u8").reshape(n, words)
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    best = np.zeros(n, dtype=np.int64)
    best_back = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for back in range(1, min(PREFIX_WINDOW, n - 1) + 1):
        a, b = fixed[back:], fixed[:-back]
        same = a == b
        word = np.where(same.all(axis=1), words, np.argmin(same, axis=1))
        inside = np.minimum(word, words - 1)
        diff = a[rows[: n - back], inside] ^ b[rows[: n - back], inside]
        lowest = diff & (~diff + np.uint64(1))  # the first differing bit (little endian)
        equal_bytes = np.where(
            diff == 0, 8, np.log2(np.maximum(lowest, 1).astype(np.float64)).astype(np.int64) // 8
        )
        shared = np.where(word == words, 8 * words, 8 * word + equal_bytes)
        shared = np.minimum(shared, np.minimum(lengths[back:], lengths[:-back]))
        better = shared > best[back:]
        best[back:] = np.where(better, shared, best[back:])
        best_back[back:] = np.where(better, back, best_back[back:])
    best = np.minimum(best, PREFIX_MAX)
    return (np.maximum(best_back - 1, 0) << 13 | best).astype("<u2")


def _prefix_strings(name: str, strings: Sequence[str]) -> bytes:
    encoded = [s.encode() for s in strings]
    if not encoded:
        return b""
    heads = _shared_prefixes(encoded)
    shared = (heads & PREFIX_MAX).tolist()
    tails = b"\0".join(e[k:] for e, k in zip(encoded, shared, strict=True)) + b"\0"
    # every byte of a string is in its tail or in an earlier one's: one scan finds a NUL
    if tails.count(b"\0") != len(encoded):
        raise GraphDataError(f"column {name!r}: strings may not contain NUL characters")
    return heads.tobytes() + tails


_STRINGS: dict[str, Callable[[str, Sequence[str]], bytes]] = {
    "strs": _joined,
    "dstrs": _distinct_strings,
    "pstrs": _prefix_strings,
}


def encode_columns(meta: Mapping[str, Any], columns: Mapping[str, tuple[str, Column]]) -> bytes:
    """Pack `columns` ({name: (dtype, values)}) and a JSON-able `meta` into one buffer."""
    chunks: list[bytes] = []
    entries: list[dict[str, Any]] = []
    offset = 0
    for name, (dtype, values) in columns.items():
        if dtype in _STRINGS:
            strings = list(values)
            raw = _STRINGS[dtype](name, strings)
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
        if entry["dtype"] in _STRINGS:
            columns[entry["name"]] = _decode_strings(entry["dtype"], raw, entry["length"])
        else:
            columns[entry["name"]] = np.frombuffer(
                raw, dtype=np.dtype(entry["dtype"]).newbyteorder("<")
            )
    return header["meta"], columns


def _decode_strings(dtype: str, raw: bytes, length: int) -> list[str]:
    if not length:
        return []
    if dtype == "dstrs":
        (distinct,) = struct.unpack_from("<I", raw, 0)
        width = np.dtype(_NUMERIC[code_dtype(distinct)]).newbyteorder("<")
        codes = np.frombuffer(raw, dtype=width, count=length, offset=4)
        start = 4 + length * width.itemsize
        table = raw[start + (-start % 4) :].decode().split("\0")
        return [table[c] for c in codes.tolist()]
    if dtype == "pstrs":
        heads = np.frombuffer(raw, dtype="<u2", count=length).tolist()
        tails = raw[2 * length : -1].split(b"\0")
        whole: list[bytes] = []
        for i, (head, tail) in enumerate(zip(heads, tails, strict=True)):
            back, shared = (head >> 13) + 1, head & PREFIX_MAX
            whole.append(whole[i - back][:shared] + tail if shared else tail)
        return [w.decode() for w in whole]
    return raw.decode().split("\0")
