// The live connections of a page of plots (src/tailhub.ts), in headless
// Chromium against a real collection server and manager. A browser keeps
// at most six HTTP/1.1 connections to a host; one Server-Sent Events tail
// per plot left none for the page's fetches from six plots on (a reload
// hung) and two plots of eight without live rows. Here eight plots of one
// stream share one tail: all eight draw live rows, also after a reload;
// six plots of six streams open four tails and poll the other two
// streams, and all six draw live rows. The EventSources a page opens are
// counted by wrapping window.EventSource.
//
//   STREAMGAUGE_BIN=target/debug/streamgauge npm --prefix crates/manager/web test

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { Api, ADMIN_PASSWORD, launchBrowser, missing, removeDir, startManager, startServer, tempDir, until } from "./harness.mjs";

const why = missing();
const PASS = "bob-pass-123456789";
const STREAMS = ["st_a", "st_b", "st_c", "st_d", "st_e", "st_f"];

/** A sender of OMSP text with six streams of two fields; rows on demand. */
function sender(port, domain) {
  const sock = connect(port, "127.0.0.1");
  sock.setNoDelay(true);
  const start = Math.floor(Date.now() / 1000);
  const seq = STREAMS.map(() => 0);
  sock.write(`protocol: 5\ndomain: ${domain}\nstart-time: ${start}\nsender-id: s1\napp-name: sharedtail\n` +
    STREAMS.map((s, i) => `schema: ${i + 1} ${s} x:double y:double \n`).join("") + "content: text\n\n");
  return {
    /** One row on stream `i`. */
    row(i) {
      const n = ++seq[i];
      sock.write(`${(Date.now() / 1000 - start).toFixed(6)}\t${i + 1}\t${n}\t${n}\t${n * 2}\n`);
    },
    close: () => new Promise((r) => sock.end(r)),
  };
}

/** Counts the page's EventSources: opened in all, open at once at most. */
function countEventSources() {
  const Orig = window.EventSource;
  const c = { opened: 0, open: 0, max: 0 };
  window.__eventSources = c;
  window.EventSource = class extends Orig {
    constructor(...args) {
      super(...args);
      c.opened++;
      c.max = Math.max(c.max, ++c.open);
      this.counted = true;
    }
    close() {
      if (this.counted) c.open--;
      this.counted = false;
      super.close();
    }
  };
}

describe("shared live connections of a page of plots", { skip: why ?? false }, () => {
  let dir, server, manager, browser, ctx, p, feed, api, exp;

  before(async () => {
    dir = tempDir("sharedtail");
    server = await startServer(dir);
    manager = await startManager(dir);
    const admin = await Api.login(manager.url, "admin", ADMIN_PASSWORD);
    await admin.call("POST", "/users", { username: "bob", password: PASS, role: "user" });
    const col = await admin.call("POST", "/devices", { name: "collector", kind: "collector", hostname: "127.0.0.1", port: server.http, credential_ref: null });
    api = await Api.login(manager.url, "bob", PASS);
    exp = await api.call("POST", "/experiments", { name: "shared tail", collector: col.id });
    feed = sender(server.port, exp.domain);
    for (let i = 0; i < STREAMS.length; i++) for (let k = 0; k < 5; k++) feed.row(i);
    await until("the rows on the collector", async () => {
      for (const s of STREAMS) if ((await lastId(s)) < 5) return false;
      return true;
    });
    browser = await launchBrowser();
    ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await ctx.addInitScript(countEventSources);
    p = await ctx.newPage();
    p.on("pageerror", (e) => console.error(`page error: ${e.message}`));
    await p.goto(`${manager.url}/login`);
    await p.fill("#username", "bob");
    await p.fill("#password", PASS);
    await p.click("#login");
    await p.waitForURL((u) => !u.pathname.startsWith("/login"));
  });

  after(async () => {
    await feed?.close().catch(() => {});
    await browser?.close().catch(() => {});
    for (const x of [manager?.proc, server?.proc]) await x?.stop().catch(() => {});
    if (dir) removeDir(dir);
  });

  /** The highest row id of a stream, from the manager's query relay. */
  async function lastId(stream) {
    const ans = await api.call("GET", `/experiments/${exp.id}/query/streams/${stream}/rows?fields=oml_tuple_id`);
    return Math.max(0, ...ans.rows.map((r) => Number(r[0])));
  }

  /** The plots' state: last row id drawn, points, state, status line. */
  const plots = () => p.$$eval("div.plot", (els) => els.map((e) => ({
    stream: e.dataset.stream, last: Number(e.dataset.lastId ?? 0), points: Number(e.dataset.points ?? 0), state: e.dataset.state,
    status: e.querySelector(".plot-status")?.textContent ?? "",
  })));

  /** Sends rows on the streams shown, then waits for every plot to draw the last one. */
  async function liveRowsDrawn(streams, what) {
    const want = {};
    for (const s of new Set(streams)) want[s] = (await lastId(s)) + 3;
    for (let k = 0; k < 3; k++) for (const s of new Set(streams)) feed.row(STREAMS.indexOf(s));
    for (const s of new Set(streams)) await until(`the new rows of ${s} stored`, async () => (await lastId(s)) >= want[s]);
    await until(what, async () => (await plots()).every((x) => x.last >= want[x.stream]), 20000);
  }

  test("eight plots of one stream: one tail, every plot live, also after a reload", async () => {
    const t0 = Date.now();
    // Eight plots of one stream, of its two fields in turns (the tail asks both).
    const q = Array.from({ length: 8 }, (_, i) => `plot=${STREAMS[0]}:${i % 2 ? "y" : "x"}`).join("&");
    await p.goto(`${manager.url}/experiments/${exp.id}/plots?${q}`);
    await until("eight plots drawn and live", async () => {
      const ps = await plots();
      return ps.length === 8 && ps.every((x) => x.points > 0 && x.state === "live");
    });
    await liveRowsDrawn(Array(8).fill(STREAMS[0]), "the live rows on all eight plots");
    const es = await p.evaluate(() => window.__eventSources);
    assert.ok(es.max <= 4, `EventSources open at once: ${es.max}`);
    assert.equal(es.max, 1, "one stream, one tail");

    // A reload while live draws the plots again (it hung with 6+ tails).
    await p.reload();
    await until("eight plots drawn again after the reload", async () => {
      const ps = await plots();
      return ps.length === 8 && ps.every((x) => x.points > 0 && x.state === "live");
    }, 15000);
    for (const x of await plots()) assert.match(x.status, /updated \d+ s ago/);
    await liveRowsDrawn(Array(8).fill(STREAMS[0]), "the live rows on all eight plots after the reload");
    assert.equal((await p.evaluate(() => window.__eventSources)).max, 1);
    console.log(`# eight plots of one stream: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });

  test("six streams: four tails, two polled, every plot gets live rows", async () => {
    const q = STREAMS.map((s) => `plot=${s}:x`).join("&");
    await p.goto(`${manager.url}/experiments/${exp.id}/plots?${q}`);
    await until("six plots drawn, four live and two polling", async () => {
      const ps = await plots();
      return ps.length === 6 && ps.every((x) => x.points > 0) &&
        ps.filter((x) => x.state === "live").length === 4 && ps.filter((x) => x.state === "polling").length === 2;
    });
    for (const x of (await plots()).filter((x) => x.state === "polling")) assert.match(x.status, /polling every 2 s/);
    await liveRowsDrawn(STREAMS, "the new rows on all six plots");
    const es = await p.evaluate(() => window.__eventSources);
    assert.ok(es.max <= 4, `EventSources open at once: ${es.max}`);
    // The page's own requests still go through.
    assert.equal(await p.evaluate(async () => (await fetch("/api/v1/session")).status), 200);
  });

  test("a plot whose first request failed says it was not updated yet", async () => {
    await p.goto(`${manager.url}/experiments/${exp.id}/plots?plot=no_such_stream:x`);
    await until("the error shown", async () => {
      const [x] = await plots();
      return x && /not updated yet/.test(x.status) && !/\d+ s ago/.test(x.status);
    });
  });
});
