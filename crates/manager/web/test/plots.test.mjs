// The run page's plots in headless Chromium against a real collection
// server, capture daemon (in namespaces this test creates and deletes)
// and manager: streams that appear during the run are offered without a
// reload, counters are drawn as rates (and raw on demand), silences break
// the lines, two senders are two series with legend toggles, fields of
// different units get a second y axis, times follow the page's UTC /
// local / relative switch, the run's start, pause, resume and stop are
// drawn on the plot, PNG, SVG and the definition are exported, the plots
// are saved as a dashboard and restored on a fresh page, three runs are
// overlaid at their starts with their mean and spread, and the device
// going down is said in place of "live".
//
// The measurements come from two senders speaking OMSP text (as a client
// library would) with `unit` and `kind` metadata.
//
//   STREAMGAUGE_BIN=target/debug/streamgauge npm --prefix crates/manager/web test

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import {
  Api, ADMIN_PASSWORD, DEVICE_CREDENTIAL, launchBrowser, makeNetns, missing, readFileSync, removeDir, screenshot, sleep,
  startCapture, startManager, startServer, tempDir, until,
} from "./harness.mjs";

const why = missing();
const PASS = "alice-pass-123456";
const STREAM = "plotfeed_m";
/** Row period of the senders (s) and counter step per row. */
const PERIOD = 0.05;
const STEP = { a: 1000, b: 500 };

/** A sender: OMSP text with units and kinds declared as metadata; rows on demand. */
function sender(port, domain, name) {
  const sock = connect(port, "127.0.0.1");
  sock.setNoDelay(true);
  const start = Math.floor(Date.now() / 1000);
  let seq = 0;
  let bytes = 0;
  const ts = () => (Date.now() / 1000 - start).toFixed(6);
  sock.write(`protocol: 5\ndomain: ${domain}\nstart-time: ${start}\nsender-id: ${name}\napp-name: plotfeed\n` +
    "schema: 0 _experiment_metadata subject:string key:string value:string \n" +
    `schema: 1 ${STREAM} bytes:uint64 volts:double \ncontent: text\n\n`);
  for (const [subject, key, value] of [[`.${STREAM}.bytes`, "unit", "B"], [`.${STREAM}.bytes`, "kind", "counter"], [`.${STREAM}.volts`, "unit", "V"]]) {
    sock.write(`${ts()}\t0\t${++seq}\t${subject}\t${key}\t${value}\n`);
  }
  return {
    get bytes() {
      return bytes;
    },
    row() {
      bytes += STEP[name];
      sock.write(`${ts()}\t1\t${++seq}\t${bytes}\t${(1.5 + seq / 1000).toFixed(4)}\n`);
    },
    close: () => new Promise((r) => sock.end(r)),
  };
}

/** `n` rows from each sender, one every PERIOD. */
async function burst(senders, n) {
  for (let i = 0; i < n; i++) {
    for (const s of senders) s.row();
    await sleep(PERIOD * 1000);
  }
}

describe("run page plots", { skip: why ?? false }, () => {
  let dir, ns, server, capture, manager, browser;
  const ids = {};
  const procs = () => [manager?.proc, capture?.proc, server?.proc].filter(Boolean);

  before(async () => {
    dir = tempDir("plots");
    ns = makeNetns(`p${process.pid}`);
    try {
      server = await startServer(dir);
      capture = await startCapture(dir, ns, server.port);
      manager = await startManager(dir);
      const admin = await Api.login(manager.url, "admin", ADMIN_PASSWORD);
      await admin.call("POST", "/users", { username: "alice", password: PASS, role: "user" });
      ids.collector = (await admin.call("POST", "/devices", { name: "collector", kind: "collector", hostname: "127.0.0.1", port: server.http, credential_ref: null })).id;
      ids.tap = (await admin.call("POST", "/devices", { name: "tap", kind: "capture", hostname: "127.0.0.1", port: capture.api, credential_ref: DEVICE_CREDENTIAL })).id;
      await admin.call("POST", `/devices/${ids.tap}/refresh`, {});
      const alice = await Api.login(manager.url, "alice", PASS);
      const exp = await alice.call("POST", "/experiments", { name: "plots", collector: ids.collector });
      ids.exp = exp.id;
      ids.domain = exp.domain;
      const cfg = await alice.call("POST", `/experiments/${exp.id}/configs`, {
        name: "counters-only", device: ids.tap, storage: { type: "local" }, session: { interface: "sgw0", snaplen: 128, counter_interval_s: 1 },
      });
      ids.config = cfg.id;
      ids.run = (await alice.call("POST", `/experiments/${exp.id}/runs`, { config: cfg.id })).id;
      browser = await launchBrowser();
    } catch (e) {
      for (const p of procs()) if (p.out) console.error(`--- ${p.name}:\n${p.out.slice(-3000)}`);
      throw e;
    }
  });

  after(async () => {
    await browser?.close().catch(() => {});
    for (const p of procs()) await p.stop().catch(() => {});
    ns?.cleanup();
    if (dir) removeDir(dir);
  });

  test("streams appear live; rates, gaps, senders, second axis, time modes, run events, exports, dashboards, run comparison, device down", async () => {
    const t0 = Date.now();
    // Local time is India's (+05:30, no summer time): a fixed offset to look for.
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true, timezoneId: "Asia/Kolkata" });
    const p = await ctx.newPage();
    p.on("pageerror", (e) => console.error(`page error: ${e.message}`));
    await p.goto(`${manager.url}/login?next=/runs/${ids.run}`);
    await p.fill("#username", "alice");
    await p.fill("#password", PASS);
    await p.click("#login");
    await p.waitForSelector("#no-streams");

    // Start from the page; the senders begin after it.
    await p.click(".run-head button.run-start");
    await p.waitForSelector(".run-head [data-state=running]", { timeout: 20000 });
    const a = sender(server.port, ids.domain, "a");
    const b = sender(server.port, ids.domain, "b");
    await burst([a, b], 20);

    // The stream is offered without a reload.
    await p.waitForSelector(`#plot-stream option[value="${STREAM}"]`, { state: "attached", timeout: 15000 });
    await p.selectOption("#plot-stream", STREAM);
    assert.match(await p.textContent("#plot-fields"), /bytes \(B, counter\)/);
    await p.click("#plot-add"); // bytes, the first field: a counter
    const A = `div.plot[data-stream="${STREAM}"][data-fields="bytes"]`;
    await p.waitForSelector(A);
    await until("both senders drawn", async () => Object.keys(JSON.parse((await p.getAttribute(A, "data-last")) || "{}")).length === 2);
    assert.equal(await p.getAttribute(A, "data-derive"), "rate", "a counter is drawn as a rate");
    assert.deepEqual(Object.keys(JSON.parse(await p.getAttribute(A, "data-last"))), ["bytes @1", "bytes @2"], "one series per sender");
    for (const rate of Object.values(JSON.parse(await p.getAttribute(A, "data-last")))) {
      assert.ok(rate > STEP.b / PERIOD / 3 && rate < STEP.a / PERIOD * 3, `rate ${rate} B/s, about ${STEP.a / PERIOD} or ${STEP.b / PERIOD}`);
    }
    assert.ok(JSON.parse(await p.getAttribute(A, "data-y-ticks")).every((t) => / B\/s$/.test(t)), "y ticks in B/s");
    assert.match(await p.textContent(`${A} .units`), /rate of bytes \(B\/s\)/);

    // Pause and resume the run while the senders are silent, then more rows.
    await p.click(".run-head button.run-pause");
    await p.waitForSelector(".run-head [data-state=paused]", { timeout: 20000 });
    await sleep(600);
    await p.click(".run-head button.run-resume");
    await p.waitForSelector(".run-head [data-state=running]", { timeout: 20000 });
    await burst([a, b], 20);
    await until("the second burst drawn", async () => {
      const rows = await (await fetch(`${manager.url}/api/v1/experiments/${ids.exp}/query/streams/${STREAM}/rows?fields=bytes`, { headers: { Cookie: await cookie(ctx) } })).json();
      return rows.rows.length === 80;
    });
    // The silence breaks each sender's line (the tail's rows, and the
    // query API's gaps once fetched again).
    await until("a break per sender", async () => Number(await p.getAttribute(A, "data-breaks")) >= 2);
    await p.click(".run-head button.run-stop");
    await p.waitForSelector(".run-head [data-state=stopped]", { timeout: 20000 });
    await until("start, pause, resume and stop drawn", async () => {
      const kinds = JSON.parse((await p.getAttribute(A, "data-marks")) || "[]").map((m) => m.split("@")[0]);
      return ["start", "pause", "resume", "stop"].every((k) => kinds.includes(k));
    });

    // Reloaded: the plot comes back from the URL; the gaps come from the query API.
    assert.match(p.url(), new RegExp(`plot=${STREAM}%3Abytes`));
    await p.reload();
    await until("the plot reloaded", async () => Number(await p.getAttribute(A, "data-points")) > 0);
    await until("gaps from the query API", async () => Number(await p.getAttribute(A, "data-breaks")) >= 2);
    assert.match(await p.textContent(`${A} .plot-status`), /updated \d+ s ago/);

    // Raw values on demand (kept in the URL).
    await p.click(`${A} button.derive-toggle`);
    // (Which sender got id 1 is the order their connections were taken.)
    await until("raw values", async () => (await p.getAttribute(A, "data-derive")) === "none" &&
      JSON.stringify(Object.values(JSON.parse(await p.getAttribute(A, "data-last"))).sort()) === JSON.stringify([a.bytes, b.bytes].sort()));
    assert.match(decodeURIComponent(p.url()), new RegExp(`plot=${STREAM}:bytes;raw`));

    // Times: UTC by default, the same in the log and on the axis.
    const utc = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,3})?Z$/;
    const ticks = async () => JSON.parse(await p.getAttribute(A, "data-x-ticks"));
    assert.match((await ticks())[0], utc);
    assert.match(await p.textContent("#run-log"), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ /m);
    await p.selectOption("#time-mode", "local");
    await until("local ticks", async () => (await ticks())[0].endsWith("+05:30"));
    await until("local times in the log", async () => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+05:30 /m.test(await p.textContent("#run-log")));
    await p.selectOption("#time-mode", "relative");
    await until("relative ticks", async () => /^[+-]\d+:\d\d:\d\d/.test((await ticks())[0]));
    await until("relative times in the log", async () => /^\+0:00:\d\d(\.\d+)? /m.test(await p.textContent("#run-log")));

    // Legend: hide sender 2; the definition then names sender 1 only.
    await p.click(`${A} .u-legend tr.u-series:nth-child(3) th`);
    await until("sender 2 hidden", async () => JSON.parse(await p.getAttribute(A, "data-hidden")).includes("bytes @2"));

    // Exports.
    const download = async (what) => {
      const [d] = await Promise.all([p.waitForEvent("download"), p.click(`${A} button[data-export=${what}]`)]);
      return { name: d.suggestedFilename(), bytes: readFileSync(await d.path()) };
    };
    const png = await download("png");
    assert.equal(png.bytes.subarray(0, 8).toString("hex"), "89504e470d0a1a0a", png.name);
    const svg = (await download("svg")).bytes.toString();
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    const paths = [...svg.matchAll(/<path class="series" data-label="([^"]+)" data-points="(\d+)"/g)].map((m) => [m[1], Number(m[2])]);
    assert.equal(paths.length, 1, `the visible series only: ${JSON.stringify(paths)}`);
    assert.equal(paths[0][0], "bytes @1");
    assert.ok(paths[0][1] >= 20, `points in the SVG path: ${paths[0][1]}`);
    assert.match(svg, /d="M[^"]*M/, "the gap starts a new piece of the path");
    for (const k of ["start", "pause", "resume", "stop"]) assert.match(svg, new RegExp(`class="mark" data-kind="${k}"`));
    assert.match(svg, /<text[^>]*>\+0:\d\d:\d\d/, "time labels as on the page (relative)");
    const def = JSON.parse((await download("definition")).bytes.toString());
    assert.deepEqual(Object.keys(def), ["version", "title", "domain", "stream", "fields", "y2", "senders", "from", "to", "time", "derive", "points", "timeaxis"]);
    assert.deepEqual({ ...def, title: "", from: "", to: "", points: 0 }, {
      version: 1, title: "", domain: ids.domain, stream: STREAM, fields: ["bytes"], y2: [], senders: [1], from: "", to: "",
      time: "server", derive: "none", points: 0, timeaxis: "relative",
    });
    assert.ok(Date.parse(def.from) < Date.parse(def.to) && Date.parse(def.to) <= Date.now() + 5000, `${def.from} .. ${def.to}`);
    assert.ok(def.points >= 64);

    // Two units on one plot: volts on a second axis.
    await p.selectOption("#plot-stream", STREAM);
    for (const box of await p.$$("#plot-fields input")) await box.check();
    await p.click("#plot-add");
    const B = `div.plot[data-stream="${STREAM}"][data-fields="bytes,volts"]`;
    await until("the two-unit plot drawn", async () => Number(await p.getAttribute(B, "data-points")) > 0);
    assert.equal(await p.getAttribute(B, "data-derive"), "none", "not every field is a counter");
    assert.equal(await p.getAttribute(B, "data-y2"), "volts");
    await until("V ticks on the second axis", async () => JSON.parse((await p.getAttribute(B, "data-y2-ticks")) || "[]").some((t) => / V$/.test(t)));
    assert.ok(JSON.parse(await p.getAttribute(B, "data-y-ticks")).every((t) => / (k|M)?B$/.test(t)), await p.getAttribute(B, "data-y-ticks"));
    await screenshot(p, "run-plots");

    // A dashboard of these two plots, saved on the server and restored on a fresh page.
    p.once("dialog", (d) => d.accept("overview"));
    await p.click("#dash-save");
    await p.waitForSelector("#dash-msg:has-text('saved as overview')");
    const saved = await (await fetch(`${manager.url}/api/v1/experiments/${ids.exp}/dashboards`, { headers: { Cookie: await cookie(ctx) } })).json();
    assert.deepEqual(saved.map((d) => [d.name, d.plots.map((x) => [x.fields.join(","), x.derive, x.senders])]),
      [["overview", [["bytes", "none", [1]], ["bytes,volts", "none", []]]]]);
    await p.goto(`${manager.url}/runs/${ids.run}`);
    await until("the dashboard's plots restored", async () => (await p.$$("div.plot")).length === 2 && Number(await p.getAttribute(A, "data-points")) > 0);
    assert.equal(await p.inputValue("#dash-select"), "overview");
    assert.equal(await p.getAttribute(A, "data-derive"), "none");
    await until("sender 2 hidden as saved", async () => JSON.parse((await p.getAttribute(A, "data-hidden")) || "[]").includes("bytes @2"));
    assert.equal(await p.getAttribute(B, "data-y2"), "volts");
    await until("V ticks on the restored second axis", async () => JSON.parse((await p.getAttribute(B, "data-y2-ticks")) || "[]").some((t) => / V$/.test(t)));

    // Two more runs with rows of their own, then the three overlaid at their starts.
    const api = await Api.login(manager.url, "alice", PASS);
    for (let i = 0; i < 2; i++) {
      const r = await api.call("POST", `/experiments/${ids.exp}/runs`, { config: ids.config });
      await api.call("POST", `/runs/${r.id}/start`, {});
      await burst([a, b], 10);
      await sleep(300);
      await api.call("POST", `/runs/${r.id}/stop`, {});
    }
    await p.click("#compare summary");
    await p.waitForSelector("#compare-go");
    await p.selectOption("#compare-stream", STREAM);
    await p.selectOption("#compare-field", "bytes");
    await p.click("#compare-go");
    const C = "div.plot.compare";
    await until("the runs compared", async () => (await p.getAttribute(C, "data-runs")) !== null, 15000);
    assert.equal(await p.getAttribute(C, "data-runs"), `${ids.run},${ids.run + 1},${ids.run + 2}`);
    assert.equal(await p.getAttribute(C, "data-band"), "true", "three runs: mean and spread");
    const perRun = JSON.parse(await p.getAttribute(C, "data-points"));
    assert.ok(Object.values(perRun).every((n) => n >= 10), `points per run ${JSON.stringify(perRun)}`);
    assert.ok(Number(await p.getAttribute(C, "data-mean-points")) > 0);
    const mean = JSON.parse(await p.getAttribute(C, "data-mean"));
    assert.ok(mean > STEP.b / PERIOD / 3 && mean < STEP.a / PERIOD * 3, `mean rate ${mean} B/s`);
    await p.locator(C).scrollIntoViewIfNeeded();
    await screenshot(p, "run-compare");

    // The device goes away: the plots say so instead of "live".
    await capture.proc.stop();
    await until("the plot to say the device is down", async () => /device tap is down/.test(await p.textContent(`${A} .plot-status`)), 20000, 200);
    assert.equal(await p.getAttribute(A, "data-state"), "down");
    await Promise.all([a.close(), b.close()]);
    await ctx.close();
    console.log(`# run page plots test: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });
});

/** The context's session cookie, for the API calls the test makes itself. */
async function cookie(ctx) {
  return (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
}
