import { describe, expect, it } from "vitest";
import { decodeColumns, encodeColumns } from "../src/graph_view/columns";

describe("binary columns", () => {
  it("round-trips numeric and string columns with their meta", () => {
    const buffer = encodeColumns(
      { version: 3, ops: ["Conv", "Relu"] },
      {
        ids: ["i4", [1, -2, 3]],
        flags: ["u1", [0, 255]],
        x: ["f4", [0.5, -1.25]],
        names: ["strs", ["a", "/enc/layer.0/MatMul", "ünï"]],
        empty: ["strs", []],
      },
    );
    const { meta, columns } = decodeColumns<{ version: number; ops: string[] }>(buffer);
    expect(meta.version).toBe(3);
    expect(meta.ops).toEqual(["Conv", "Relu"]);
    expect(Array.from(columns.ids as Int32Array)).toEqual([1, -2, 3]);
    expect(Array.from(columns.flags as Uint8Array)).toEqual([0, 255]);
    expect(Array.from(columns.x as Float32Array)).toEqual([0.5, -1.25]);
    expect(columns.names).toEqual(["a", "/enc/layer.0/MatMul", "ünï"]);
    expect(columns.empty).toEqual([]);
  });

  it("decodes from a DataView at an unaligned offset (as widget buffers arrive)", () => {
    const inner = encodeColumns({}, { v: ["i4", [7, 8, 9]] });
    const outer = new Uint8Array(inner.length + 3);
    outer.set(inner, 3);
    const view = new DataView(outer.buffer, 3, inner.length);
    expect(Array.from(decodeColumns(view).columns.v as Int32Array)).toEqual([7, 8, 9]);
  });

  it("decodes the kernel's shared-prefix and distinct-string columns", () => {
    // encode_columns({"v": 1}, {"paths": ("pstrs", …), "captions": ("dstrs", …),
    // "codes": ("u2", [0, 65535, 7])}) in Python
    const kernel =
      "TlNDMeQAAAB7Im1ldGEiOnsidiI6MX0sImNvbHVtbnMiOlt7Im5hbWUiOiJwYXRocyIsImR0eXBlIjoicHN0cnMiLCJvZmZzZXQiOjAsImxlbmd0aCI6OSwiYnl0ZXMiOjkwfSx7Im5hbWUiOiJjYXB0aW9ucyIsImR0eXBlIjoiZHN0cnMiLCJvZmZzZXQiOjk2LCJsZW5ndGgiOjUsImJ5dGVzIjoyN30seyJuYW1lIjoiY29kZXMiLCJkdHlwZSI6InUyIiwib2Zmc2V0IjoxMjgsImxlbmd0aCI6MywiYnl0ZXMiOjZ9XX0AAAAAAAANAAAAAAATYAAABgAAAAQAL2VuYy9sYXllci4wL01hdE11bABBZGQAZW5jLmxheWVyLjAud2VpZ2h0AABfb3V0cHV0XzAAw7xuw68vYQBiAPCfmIB4AHkAAAAAAAAAAwAAAAABAAIAAAAAQWRkAENvbnYgY29udjEAAAAAAAAAAP//BwAAAA==";
    const bytes = Uint8Array.from(atob(kernel), (ch) => ch.charCodeAt(0));
    for (const shift of [0, 3]) {
      const outer = new Uint8Array(bytes.length + shift);
      outer.set(bytes, shift);
      const { columns } = decodeColumns(new DataView(outer.buffer, shift, bytes.length));
      expect(columns.paths).toEqual([
        "/enc/layer.0/MatMul",
        "/enc/layer.0/Add",
        "enc.layer.0.weight",
        "",
        "/enc/layer.0/MatMul_output_0",
        "ünï/a",
        "ünï/b",
        "😀x",
        "😀y",
      ]);
      expect(columns.captions).toEqual(["Add", "Conv conv1", "Add", "", "Add"]);
      expect(Array.from(columns.codes as Uint16Array)).toEqual([0, 65535, 7]);
    }
  });

  it("rejects a buffer that is not a column container", () => {
    expect(() => decodeColumns(new Uint8Array([1, 2, 3, 4, 0, 0, 0, 0]))).toThrow(/NSC1/);
  });
});
