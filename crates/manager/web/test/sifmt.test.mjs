// The plots' number formatting (src/sifmt.ts), bundled by esbuild as the
// front end is: SI prefixes for small and large values, tick labels that
// differ as their values do.

import { test } from "node:test";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const src = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "sifmt.ts");
const built = await esbuild.build({ entryPoints: [src], bundle: true, format: "esm", write: false, logLevel: "silent" });
const { siFormat, siTicks } = await import("data:text/javascript," + encodeURIComponent(built.outputFiles[0].text));

test("values: SI prefixes far from 1, plain decimals between", () => {
  assert.equal(siFormat(0.000042), "42 µ");
  assert.equal(siFormat(0.000042, "s"), "42 µs");
  assert.equal(siFormat(0.0000421234, "s"), "42.12 µs");
  assert.equal(siFormat(0.25, "s"), "250 ms");
  assert.equal(siFormat(0.25), "0.25");
  assert.equal(siFormat(1020), "1020");
  assert.equal(siFormat(123456.7), "123457");
  assert.equal(siFormat(2.5e9), "2.5 G");
  assert.equal(siFormat(-3e-9, "s"), "-3 ns");
  assert.equal(siFormat(0), "0");
});

test("ticks: one prefix for the axis, as many decimals as the step needs", () => {
  assert.deepEqual(siTicks([0.00004, 0.000042, 0.000044], 0.000002), ["40 µ", "42 µ", "44 µ"]);
  assert.deepEqual(siTicks([0.00004, 0.000045, 0.00005], 0.000005, "s"), ["40 µs", "45 µs", "50 µs"]);
  assert.deepEqual(siTicks([0, 0.25, 0.5, 0.75], 0.25), ["0.00", "0.25", "0.50", "0.75"]);
  assert.deepEqual(siTicks([-1e-5, 0, 1e-5], 1e-5, "s"), ["-10 µs", "0 µs", "10 µs"]);
  assert.deepEqual(siTicks([0, 2e6, 4e6], 2e6), ["0 M", "2 M", "4 M"]);
  assert.deepEqual(siTicks([0, 500, 1000], 500), ["0", "500", "1000"]);
  assert.deepEqual(siTicks([1.5e-6, 1.75e-6, 2e-6], 0.25e-6), ["1.50 µ", "1.75 µ", "2.00 µ"]);
});
