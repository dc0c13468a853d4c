// Bundles each widget's TypeScript into ONE self-contained ESM file in nsdl_jupyter/static/.
// No code splitting: anywidget loads a widget's ESM from a string/blob URL, so it cannot
// import sibling chunks (lonboard's build.mjs makes the same choice for the same reason).
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, "src");
const outDir = join(here, "..", "nsdl_jupyter", "static");
const watch = process.argv.includes("--watch");

// every folder js/src/<widget>/ with an index.ts becomes nsdl_jupyter/static/<widget>.js
const widgets = readdirSync(srcDir).filter((name) => {
  const dir = join(srcDir, name);
  return statSync(dir).isDirectory() && readdirSync(dir).includes("index.ts");
});

const options = {
  entryPoints: Object.fromEntries(widgets.map((w) => [w, join(srcDir, w, "index.ts")])),
  outdir: outDir,
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: !watch,
  sourcemap: false,
  splitting: false,
  logLevel: "info",
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
