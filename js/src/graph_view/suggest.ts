// Quick add's suggestions while typing: the operators the kernel sends once when quick add
// opens ("operators"), ranked here without a round trip per key. The ranking restates
// nsdl_jupyter/editors/_palette.py rank_keys; js/test/quick_add_ranking.json holds the cases
// both pass (js/test/quick_add.test.ts, tests/test_quick_add_vocabulary.py).

/** Palette keys (`Conv`, `com.microsoft::Attention`) matching `text`, best first: exact name,
 *  then name prefix, then word start (`norm` -> LayerNormalization), then substring; ties:
 *  the default domain first, then shorter names, then A→Z. */
export function rankKeys(keys: readonly string[], text: string, limit = 20): string[] {
  const needle = text.trim().toLowerCase();
  if (!needle) return [];
  const scored: [number, number, number, string, string][] = [];
  for (const key of keys) {
    const cut = key.lastIndexOf("::");
    const domain = cut < 0 ? "" : key.slice(0, cut);
    const opType = cut < 0 ? key : key.slice(cut + 2);
    const name = opType.toLowerCase();
    const lowered = key.toLowerCase();
    let rank: number;
    if (needle === name || needle === lowered) rank = 0;
    else if (name.startsWith(needle) || lowered.startsWith(needle)) rank = 1;
    else if (wordStart(opType, needle)) rank = 2;
    else if (lowered.includes(needle)) rank = 3;
    else continue;
    scored.push([rank, domain !== "" ? 1 : 0, name.length, name, key]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2] || compare(a[3], b[3]));
  return scored.slice(0, limit).map((s) => s[4]);
}

/** `norm` matches LayerNormalization at its capital letter. */
function wordStart(opType: string, needle: string): boolean {
  for (let i = 1; i < opType.length; i++) {
    const c = opType[i];
    if (c !== c.toLowerCase() && opType.slice(i).toLowerCase().startsWith(needle)) return true;
  }
  return false;
}

// Python compares str by code point; localeCompare would not
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
