// Colour maps for overlays (profiling times, any per-node value) and op-type colours.
const MAPS: Record<string, string[]> = {
  viridis: ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"],
  magma: ["#000004", "#51127c", "#b73779", "#fc8961", "#fcfdbf"],
  reds: ["#fff5f0", "#fcbba1", "#fb6a4a", "#cb181d", "#67000d"],
  blues: ["#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"],
  coolwarm: ["#3b4cc0", "#8db0fe", "#dddddd", "#f49a7b", "#b40426"],
};

export const COLORMAPS = Object.keys(MAPS);

function hexToRgb(hex: string): [number, number, number] {
  const v = Number.parseInt(hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

/** Colour of `t` in [0, 1] on the named map (linear between its stops). */
export function colorAt(name: string, t: number): string {
  const stops = MAPS[name] ?? MAPS.viridis;
  const u = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const k = Math.min(stops.length - 2, Math.floor(u));
  const f = u - k;
  const a = hexToRgb(stops[k]);
  const b = hexToRgb(stops[k + 1]);
  const c = a.map((v, i) => Math.round(v + (b[i] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** A CSS gradient for the legend. */
export function gradientCss(name: string): string {
  const stops = MAPS[name] ?? MAPS.viridis;
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

/** Readable text colour on a background produced by colorAt. */
export function textOn(rgb: string): string {
  const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(rgb);
  if (!m) return "#1f2328";
  const lum = 0.299 * Number(m[1]) + 0.587 * Number(m[2]) + 0.114 * Number(m[3]);
  return lum > 140 ? "#1f2328" : "#ffffff";
}

const CATEGORY: [RegExp, string][] = [
  [/^(Conv|ConvTranspose|QLinearConv|ConvInteger)$/, "#dbeafe"],
  [/^(MatMul|Gemm|MatMulInteger|QLinearMatMul|Einsum|Attention|MultiHeadAttention)/, "#e0e7ff"],
  [/(Relu|Sigmoid|Tanh|Gelu|Softmax|LeakyRelu|Elu|Selu|HardSwish|Erf|Clip)/, "#fce7f3"],
  [/(Norm|Normalization)/, "#dcfce7"],
  [/(Pool)/, "#cffafe"],
  [
    /^(Reshape|Transpose|Flatten|Squeeze|Unsqueeze|Concat|Split|Slice|Gather|Expand|Shape|Cast)$/,
    "#f3f4f6",
  ],
  [/^(Add|Sub|Mul|Div|Pow|Sqrt|Exp|Log|Neg|Abs|Reciprocal)$/, "#fef9c3"],
  [/^(If|Loop|Scan)$/, "#ffedd5"],
];

export function opColor(op: string): string {
  const bare = op.includes("::") ? op.slice(op.indexOf("::") + 2) : op;
  for (const [pattern, color] of CATEGORY) if (pattern.test(bare)) return color;
  return "#ede9fe";
}
