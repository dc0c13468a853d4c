// Decoder of the binary column container written by nsdl_jupyter/graph/_columns.py:
//   "NSC1" | uint32 header_len | JSON header | zero padding to 8 | column data (8-aligned)
// String columns: "strs" (joined by NUL), "dstrs" (codes into distinct strings), "pstrs"
// (prefixes shared with an earlier string); _columns.py describes their bytes.

export type NumericColumn =
  | Uint8Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array;
export type Column = NumericColumn | string[];

export interface ColumnEntry {
  name: string;
  dtype: "u1" | "u2" | "i4" | "u4" | "f4" | "f8" | "strs" | "dstrs" | "pstrs";
  offset: number;
  length: number;
  bytes: number;
}

export interface Decoded<M> {
  meta: M;
  columns: Record<string, Column>;
}

const MAGIC = "NSC1";

function asBytes(buffer: ArrayBuffer | ArrayBufferView): Uint8Array {
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

function numeric(
  bytes: Uint8Array,
  dtype: ColumnEntry["dtype"],
  start: number,
  length: number,
): NumericColumn {
  // typed arrays need aligned offsets into their buffer: copy when the view is not aligned
  const absolute = bytes.byteOffset + start;
  const size = { u1: 1, u2: 2, i4: 4, u4: 4, f4: 4, f8: 8, strs: 1, dstrs: 1, pstrs: 1 }[dtype];
  let buffer = bytes.buffer as ArrayBuffer;
  let offset = absolute;
  if (absolute % size !== 0) {
    buffer = bytes.slice(start, start + length * size).buffer;
    offset = 0;
  }
  switch (dtype) {
    case "u1":
      return new Uint8Array(buffer, offset, length);
    case "u2":
      return new Uint16Array(buffer, offset, length);
    case "i4":
      return new Int32Array(buffer, offset, length);
    case "u4":
      return new Uint32Array(buffer, offset, length);
    case "f4":
      return new Float32Array(buffer, offset, length);
    case "f8":
      return new Float64Array(buffer, offset, length);
    default:
      throw new Error(`not a numeric dtype: ${dtype}`);
  }
}

const decoder = new TextDecoder();

function codeDtype(distinct: number): "u1" | "u2" | "u4" {
  return distinct <= 1 << 8 ? "u1" : distinct <= 1 << 16 ? "u2" : "u4";
}

const STRINGS = {
  strs: (raw: Uint8Array): string[] => decoder.decode(raw).split("\0"),
  dstrs: (raw: Uint8Array, length: number): string[] => {
    const distinct = new DataView(raw.buffer, raw.byteOffset, 4).getUint32(0, true);
    const width = { u1: 1, u2: 2, u4: 4 }[codeDtype(distinct)];
    const codes = numeric(raw, codeDtype(distinct), 4, length);
    const start = 4 + length * width;
    const table = decoder.decode(raw.subarray(start + ((4 - (start % 4)) % 4))).split("\0");
    const out = new Array<string>(length);
    for (let i = 0; i < length; i++) out[i] = table[codes[i]];
    return out;
  },
  pstrs: (raw: Uint8Array, length: number): string[] => {
    // rebuild every string's UTF-8 bytes (NUL-separated), then decode them all at once
    const heads = numeric(raw, "u2", 0, length);
    let size = raw.length - 2 * length;
    for (let i = 0; i < length; i++) size += heads[i] & PREFIX_MAX;
    const out = new Uint8Array(size);
    const starts = new Int32Array(length);
    let read = 2 * length;
    let write = 0;
    // byte loops, not subarray copies: most strings are a few bytes past their prefix
    for (let i = 0; i < length; i++) {
      const head = heads[i];
      let shared = head & PREFIX_MAX;
      let from = shared ? starts[i - (head >> 13) - 1] : 0;
      starts[i] = write;
      while (shared--) out[write++] = out[from++];
      for (let b = raw[read++]; b !== 0; b = raw[read++]) out[write++] = b;
      out[write++] = 0;
    }
    return decoder.decode(out.subarray(0, write - 1)).split("\0");
  },
};
const PREFIX_MAX = (1 << 13) - 1;

export function decodeColumns<M = Record<string, unknown>>(
  buffer: ArrayBuffer | ArrayBufferView,
): Decoded<M> {
  const bytes = asBytes(buffer);
  const magic = String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]);
  if (magic !== MAGIC) throw new Error("not an NSC1 column buffer");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(4, true);
  const header = JSON.parse(decoder.decode(bytes.subarray(8, 8 + headerLength))) as {
    meta: M;
    columns: ColumnEntry[];
  };
  const headEnd = 8 + headerLength;
  const dataStart = headEnd + ((8 - (headEnd % 8)) % 8);
  const columns: Record<string, Column> = {};
  for (const entry of header.columns) {
    const start = dataStart + entry.offset;
    if (entry.dtype === "strs" || entry.dtype === "dstrs" || entry.dtype === "pstrs") {
      const raw = bytes.subarray(start, start + entry.bytes);
      columns[entry.name] = entry.length === 0 ? [] : STRINGS[entry.dtype](raw, entry.length);
    } else {
      columns[entry.name] = numeric(bytes, entry.dtype, start, entry.length);
    }
  }
  return { meta: header.meta, columns };
}

type TestDtype = "u1" | "u2" | "i4" | "u4" | "f4" | "f8" | "strs";

/** Inverse of decodeColumns (plain strings only); used by the tests (the kernel writes the real buffers). */
export function encodeColumns(
  meta: unknown,
  columns: Record<string, [TestDtype, ArrayLike<number> | string[]]>,
): Uint8Array {
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  const entries: ColumnEntry[] = [];
  let offset = 0;
  for (const [name, [dtype, values]] of Object.entries(columns)) {
    let raw: Uint8Array;
    if (dtype === "strs") {
      raw = encoder.encode((values as string[]).join("\0"));
    } else {
      const Ctor = {
        u1: Uint8Array,
        u2: Uint16Array,
        i4: Int32Array,
        u4: Uint32Array,
        f4: Float32Array,
        f8: Float64Array,
      }[dtype];
      const typed = Ctor.from(values as ArrayLike<number>);
      raw = new Uint8Array(typed.buffer);
    }
    entries.push({ name, dtype, offset, length: values.length, bytes: raw.length });
    const padded = new Uint8Array(raw.length + ((8 - (raw.length % 8)) % 8));
    padded.set(raw);
    chunks.push(padded);
    offset += padded.length;
  }
  const header = encoder.encode(JSON.stringify({ meta, columns: entries }));
  const headEnd = 8 + header.length;
  const dataStart = headEnd + ((8 - (headEnd % 8)) % 8);
  const out = new Uint8Array(dataStart + offset);
  out.set(encoder.encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(4, header.length, true);
  out.set(header, 8);
  let at = dataStart;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
