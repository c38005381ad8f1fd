// Builds the front end into dist/: one JavaScript bundle and one style
// sheet under dist/assets/ with content hashes in their names (served as
// immutable by crates/manager/src/assets.rs), and dist/index.html naming
// them. Run with `npm run build` (type check first); the result is
// committed and embedded by crates/manager/build.rs (see there why).
import * as esbuild from "esbuild";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });

const result = await esbuild.build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  minify: true,
  sourcemap: false,
  format: "esm",
  target: ["es2022"],
  outdir: join(dist, "assets"),
  entryNames: "app-[hash]",
  assetNames: "[name]-[hash]",
  metafile: true,
  legalComments: "eof",
  logLevel: "warning",
});

let js = "";
let css = "";
for (const out of Object.keys(result.metafile.outputs)) {
  if (out.endsWith(".js")) js = basename(out);
  else if (out.endsWith(".css")) css = basename(out);
}
if (!js || !css) throw new Error(`esbuild produced no bundle (${Object.keys(result.metafile.outputs)})`);

const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>streamgauge manager</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/${css}">
<script type="module" src="/assets/${js}"></script>
</head>
<body>
<header id="top"></header>
<div id="alerts" role="status" aria-live="polite"></div>
<main id="app"><p class="muted">Loading…</p></main>
<noscript>The streamgauge manager needs JavaScript.</noscript>
</body>
</html>
`;
writeFileSync(join(dist, "index.html"), html);
const sizes = Object.entries(result.metafile.outputs)
  .map(([f, o]) => `${basename(f)} ${(o.bytes / 1024).toFixed(1)} KiB`)
  .join(", ");
console.log(`built dist/: index.html, ${sizes}`);
