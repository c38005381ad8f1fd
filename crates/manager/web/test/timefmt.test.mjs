// The one time format of the UI (src/timefmt.ts) and the gap widening of
// the plots (src/plotgaps.ts), bundled by esbuild as the front end is.
// Local time is checked in the browser test (its time zone is set there).

import { test } from "node:test";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
async function load(file) {
  const built = await esbuild.build({ entryPoints: [join(here, "..", "src", file)], bundle: true, format: "esm", write: false, logLevel: "silent" });
  return import("data:text/javascript," + encodeURIComponent(built.outputFiles[0].text));
}
// timefmt keeps the mode in localStorage; node has none by default.
globalThis.localStorage ??= { getItem: () => null, setItem: () => {} };
const t = await load("timefmt.ts");

const T = Date.UTC(2026, 10, 28, 21, 2, 43, 250) / 1000;

test("UTC: ISO-like with Z, decimals on demand", () => {
  t.setTimeMode("utc");
  assert.equal(t.fmtInstant(T), "2026-11-28 21:02:43Z");
  assert.equal(t.fmtInstant(T, 3), "2026-11-28 21:02:43.250Z");
  assert.equal(t.fmtInstant(null), "—");
  assert.equal(t.isoUtc(T), "2026-11-28T21:02:43.250Z");
});

test("relative to the run start, and UTC while there is no start", () => {
  t.setTimeMode("relative");
  t.setTimeOrigin(null);
  assert.equal(t.fmtInstant(T), "2026-11-28 21:02:43Z");
  t.setTimeOrigin(T - 3723.5);
  assert.equal(t.fmtInstant(T), "+1:02:03");
  assert.equal(t.fmtInstant(T, 1), "+1:02:03.5");
  assert.equal(t.fmtInstant(T - 3725), "-0:00:01");
  assert.equal(t.fmtInstant(T + 86400), "+1d 01:02:03");
  t.setTimeOrigin(null);
});

test("axis ticks: the date once, then the clock; decimals from the step", () => {
  t.setTimeMode("utc");
  const day = Date.UTC(2026, 10, 28, 23, 59, 58) / 1000;
  assert.deepEqual(t.timeTicks([day, day + 1, day + 2], 1), ["2026-11-28 23:59:58Z", "23:59:59Z", "2026-11-29 00:00:00Z"]);
  assert.deepEqual(t.timeTicks([day, day + 0.25], 0.25), ["2026-11-28 23:59:58.00Z", "23:59:58.25Z"]);
  assert.deepEqual(t.timeTicks([day, day + 0.5], 0.5), ["2026-11-28 23:59:58.0Z", "23:59:58.5Z"]);
  assert.equal(t.digitsFor(0.001), 3);
  assert.equal(t.digitsFor(5), 0);
});

test("a sender's gap spans the other senders' rows in between", async () => {
  const { widenGaps } = await load("plotgaps.ts");
  const col = [1, undefined, 2, undefined, null, undefined, 3, undefined];
  widenGaps(col);
  assert.deepEqual(col, [1, undefined, 2, null, null, null, 3, undefined]);
});

test("runs on one grid: each run's means, and the runs' mean and spread where all have values", async () => {
  const { gridWidth, onGrid } = await load("rungrid.ts");
  const runs = [
    { xs: [0.1, 0.6, 1.1, 1.6], ys: [10, 20, 30, 40] },
    { xs: [0.2, 0.7, 1.2], ys: [0, null, 6] },
    { xs: [0.3, 1.3, 1.8], ys: [2, 4, 8] },
  ];
  assert.equal(gridWidth(runs, 2), 2, "twice the longest typical period (run 3: 1 s)");
  assert.equal(gridWidth([{ xs: [0, 0.01, 0.02] }], 100), 1, "a hundredth of the span when rows are dense");
  const g = onGrid(runs, 2, 1);
  assert.deepEqual(g.x, [0.5, 1.5]);
  assert.deepEqual(g.runs, [[15, 35], [0, 6], [2, 6]]);
  assert.deepEqual(g.mean, [17 / 3, 47 / 3]);
  assert.deepEqual([g.lo, g.hi], [[0, 6], [15, 35]]);
  const sparse = onGrid([runs[0], { xs: [0.1], ys: [1] }], 2, 1);
  assert.deepEqual(sparse.mean, [8, null], "no band where a run is silent");
});

test("tail rows: rates against the sender's previous row, no rate after a restart, a break after a silence", async () => {
  const { PlotRows } = await load("plotrows.ts");
  const r = new PlotRows(["n"]);
  // A fetched whole stream: sender 7 every second from t=100.
  r.load({ start_time: 100, fields: [{ name: "oml_tuple_id" }, { name: "oml_sender_id" }, { name: "oml_ts_server" }, { name: "n" }],
    rows: [[1, 7, 0, 5], [2, 7, 1, 6], [3, 7, 2, 7], [4, 7, 3, 8]], gaps: [] }, true);
  assert.equal(r.tailValues(104, 7, { n: 100 }, true), null, "the first tail row only sets the base");
  assert.deepEqual(r.tailValues(106, 7, { n: 110 }, true), [5]);
  assert.deepEqual(r.tailValues(107, 7, { n: 3 }, true), [null], "a counter that went down");
  assert.deepEqual(r.tailValues(108, 7, { n: 3 }, false), [3]);
  r.addTail(104, 7, [1]);
  assert.equal(r.points(), 5);
  r.addTail(110, 7, [2]); // 6 s after the last row, period 1 s
  assert.equal(r.points(), 6);
  assert.equal(r.xs.length, 7, "a break row before it");
  assert.deepEqual(r.columns().cols[0].slice(-3), [1, null, 2]);
});
