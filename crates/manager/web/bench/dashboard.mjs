// Benchmark (not a test): a saved dashboard of 8 plots over one large
// stream, in headless Chromium against a real collection server and
// manager. Wanted: the dashboard first draws in ≤ 1 s warm, and a live
// row is drawn ≤ 50 ms (median) after it is sent.
//
//   node crates/manager/web/bench/dashboard.mjs [--rows N] [--live-s S] [--rate R] [--warm K] [--plots P]
//
// Steps:
//  1. a collection server (`streamgauge server --http`) takes two OMSP
//     text senders (`a`, `b`) declaring the stream `dash_wave` (fields
//     f0..f3) with one row each, so that the server itself creates the
//     domain's SQLite file with its `_senders`, `_experiment_metadata`
//     and clock tables; it is stopped;
//  2. N rows, alternately from both senders, one per millisecond ending
//     about now, are appended with the sqlite3 CLI (a recursive CTE, in
//     tenths, each printed as it is committed); the server is started
//     again on that data directory;
//  3. a manager gets the server as collector device and an experiment
//     adopting the domain, with a dashboard of 8 plots (f0..f3 of sender
//     a and of sender b; --plots P keeps the first P of them);
//  4. the experiment's plots page opens that dashboard: the time from
//     navigation to the last of the 8 plots drawn with data (the plot
//     element's `data-points` > 0 and `data-drawn-at`, as the browser
//     tests read them) is measured cold (the query API's tiles are built
//     by this first request) and warm (K more loads, median);
//  5. live: both senders send R rows/s each for S s, every row carrying a
//     unique marker value; a MutationObserver in the page records each
//     plot's last values at each draw; a row's latency is from its send
//     to the draw in which its series first reached it, on each plot
//     showing its sender.
//
// Binary: STREAMGAUGE_BIN, else target/release/streamgauge, else
// target/debug/streamgauge. Chromium: CHROMIUM (default /usr/bin/chromium).
// Needs the sqlite3 CLI. Everything is written under one temporary
// directory, removed at the end (--keep keeps it).

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { connect } from "node:net";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const WANT_FIRST_DRAW_MS = 1000;
const WANT_LATENCY_MS = 50;
const STREAM = "dash_wave";
const DOMAIN = "dashbench";
const FIELDS = ["f0", "f1", "f2", "f3"];
/** Live rows carry values above this; generated ones stay below 1000. */
const MARK = 1e6;
/** Spacing of the generated rows (s): one per millisecond, senders alternating. */
const DT = 0.001;

const { values: opt } = parseArgs({
  options: {
    rows: { type: "string", default: "10000000" },
    "live-s": { type: "string", default: "20" },
    rate: { type: "string", default: "10" },
    warm: { type: "string", default: "5" },
    plots: { type: "string", default: "8" },
    keep: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (opt.help) {
  console.log("usage: node bench/dashboard.mjs [--rows N (10000000)] [--live-s S (20)] [--rate ROWS_PER_S_PER_SENDER (10)] [--warm LOADS (5)] [--plots K (8; 2 to 8)] [--keep]");
  process.exit(0);
}
const int = (name, min) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`--${name} must be an integer ≥ ${min} (got ${JSON.stringify(opt[name])})`);
    process.exit(2);
  }
  return v;
};
const ROWS = int("rows", 1000);
const LIVE_S = int("live-s", 1);
const RATE = int("rate", 1);
const WARM = int("warm", 1);
const NPLOTS = int("plots", 2);
if (NPLOTS > 8) {
  console.error("--plots is at most 8 (four fields of two senders)");
  process.exit(2);
}

// The harness reads STREAMGAUGE_BIN when imported: choose the binary first.
const ROOT = new URL("../../../../", import.meta.url).pathname;
if (!process.env.STREAMGAUGE_BIN) {
  const rel = join(ROOT, "target", "release", "streamgauge");
  process.env.STREAMGAUGE_BIN = existsSync(rel) ? rel : join(ROOT, "target", "debug", "streamgauge");
}
const { Api, ADMIN_PASSWORD, BIN, CHROMIUM, Proc, freePort, launchBrowser, removeDir, sleep, startManager, tempDir, until } = await import("../test/harness.mjs");

const problems = [];
if (!existsSync(BIN)) problems.push(`no streamgauge binary at ${BIN} (cargo build -p streamgauge, or set STREAMGAUGE_BIN)`);
if (!existsSync(CHROMIUM)) problems.push(`no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM)`);
try {
  execFileSync("sqlite3", ["-version"], { stdio: "ignore" });
} catch {
  problems.push("no sqlite3 CLI (apt-get install sqlite3)");
}
if (problems.length) {
  console.error(`cannot run: ${problems.join("; ")}`);
  process.exit(2);
}

const log = (m) => console.log(`[${(performance.now() / 1000).toFixed(1)} s] ${m}`);
const q = (a, f) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(f * s.length))];
};
const median = (a) => q(a, 0.5);

/** An OMSP text sender (as a client library would speak it). */
function sender(port, name, start) {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    sock.setNoDelay(true);
    sock.on("error", reject);
    sock.on("connect", () => {
      sock.write(`protocol: 5\ndomain: ${DOMAIN}\nstart-time: ${start}\nsender-id: ${name}\napp-name: dashbench\n` +
        "schema: 0 _experiment_metadata subject:string key:string value:string \n" +
        `schema: 1 ${STREAM} ${FIELDS.map((f) => `${f}:double`).join(" ")} \ncontent: text\n\n`);
      let seq = 0;
      resolve({
        /** One row, every field `v`, stamped now. */
        row(v, seqBase = 0) {
          seq++;
          sock.write(`${(Date.now() / 1000 - start).toFixed(6)}\t1\t${seqBase + seq}\t${FIELDS.map(() => v).join("\t")}\n`);
        },
        close: () => new Promise((r) => sock.end(r)),
      });
    });
  });
}

function sqlite(db, sql) {
  return execFileSync("sqlite3", [db, sql], { encoding: "utf8" }).trim();
}

/** The collection server on fixed ports over `data`. */
async function startServer(data, port, http) {
  const p = new Proc("server", ["server", "--bind", "127.0.0.1", "-l", String(port), "-D", data, "--http", `127.0.0.1:${http}`]);
  await until("the collection server's query API", async () => {
    if (!p.alive()) throw new Error(`server exited: ${p.out.slice(-2000)}`);
    return (await fetch(`http://127.0.0.1:${http}/api/v1/domains`).catch(() => null)) !== null;
  }, 60000);
  return p;
}

/** Appends ROWS rows with the sqlite3 CLI in tenths, printing each. */
async function fill(db, ids) {
  const parts = 10;
  const per = Math.ceil(ROWS / parts);
  // The senders' first rows (stamped now) go: the stream is in time order.
  const sql = ["PRAGMA synchronous = OFF;", `DELETE FROM ${STREAM};`];
  for (let k = 0; k < parts; k++) {
    const from = k * per + 1;
    const to = Math.min(ROWS, (k + 1) * per);
    if (from > to) break;
    // Values: a triangle wave, a sawtooth, a slow square and a ramp (no sin() in plain SQLite).
    sql.push("BEGIN;",
      `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to}) ` +
      `INSERT INTO ${STREAM} (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, f0, f1, f2, f3) ` +
      `SELECT CASE WHEN i % 2 = 0 THEN ${ids.a} ELSE ${ids.b} END, 1 + i / 2, i * ${DT}, i * ${DT} + 0.0002, ` +
      "abs((i % 20000) - 10000) / 100.0, (i % 7919) / 79.19, CASE WHEN (i / 50000) % 2 = 0 THEN 10.0 ELSE 90.0 END, (i % 1000000) / 10000.0 FROM n;",
      "COMMIT;", `.print ${to}`);
  }
  const t0 = performance.now();
  const p = spawn("sqlite3", [db], { stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  p.stdout.on("data", (d) => {
    for (const line of d.toString().split("\n").filter(Boolean)) {
      const n = Number(line);
      const s = (performance.now() - t0) / 1000;
      log(`filled ${n.toLocaleString("en")} / ${ROWS.toLocaleString("en")} rows (${(n / s / 1e6).toFixed(2)} M rows/s)`);
    }
  });
  p.stdin.end(sql.join("\n") + "\n");
  const code = await new Promise((r) => p.on("exit", r));
  if (code !== 0) throw new Error(`sqlite3 failed (${code}): ${err}`);
  return (performance.now() - t0) / 1000;
}

/** One load of the plots page: navigation → all its plots drawn with data (ms). */
async function firstDraw(page, url, timeout, { fromBlank = true } = {}) {
  // From a blank page: the previous page's live connections are closed
  // first (see the reload check below for why).
  if (fromBlank) await page.goto("about:blank");
  await page.goto(url, { timeout });
  // Settled: every plot drew its downsampled rows, or shows why not (an
  // error, e.g. the query API's 503 query_timeout; the plot then follows
  // the tail alone, whose recent rows are not the dashboard's first draw).
  await page.waitForFunction((n) => {
    const plots = [...document.querySelectorAll("div.plot")];
    return plots.length === n && plots.every((e) => e.querySelector(".plot-status .error") || Number(e.dataset.points) > 0);
  }, NPLOTS, { timeout, polling: "raf" }).catch(async (e) => {
    const state = await page.evaluate(() => [...document.querySelectorAll("div.plot")]
      .map((el) => `${el.dataset.fields}: points ${el.dataset.points}, ${el.querySelector(".plot-status")?.textContent}`)).catch(() => []);
    const text = await page.evaluate(() => document.body.innerText.slice(0, 1500)).catch(() => "");
    throw new Error(`the ${NPLOTS} plots were not all drawn (${state.length} plots: ${state.join("; ")}; the page says: ${text}): ${e.message}`);
  });
  const r = await page.evaluate(() => {
    const plots = [...document.querySelectorAll("div.plot")];
    return {
      ms: Math.max(...plots.map((e) => Number(e.dataset.drawnAt))) - performance.timeOrigin,
      points: plots.map((e) => Number(e.dataset.points)),
      errors: plots.flatMap((e) => {
        const x = e.querySelector(".plot-status .error");
        return x ? [`${e.dataset.fields}: ${x.textContent}`] : [];
      }),
    };
  });
  if (r.errors.length) r.ms = NaN;
  return r;
}

/** A first draw as printed: its time, or the plots that failed. */
const drawText = (r) => (r.errors.length ? `FAILED, ${r.errors.length} of ${NPLOTS} plots: ${r.errors[0]}` : `${r.ms.toFixed(0)} ms`);

const dir = tempDir("dashbench");
const procs = [];
let browser;
// Interrupted: the server, manager and browser stop, the directory goes.
process.once("SIGINT", async () => {
  console.error("interrupted: stopping");
  await browser?.close().catch(() => {});
  for (const p of procs) await p.stop().catch(() => {});
  if (!opt.keep) removeDir(dir);
  process.exit(130);
});
try {
  log(`binary ${BIN}; ${ROWS.toLocaleString("en")} rows; machine load ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  const data = join(dir, "server");
  mkdirSync(data);
  const port = await freePort();
  const http = await freePort();
  // The rows end about now: the domain starts ROWS ms (plus a minute) ago.
  const start = Math.floor(Date.now() / 1000 - ROWS * DT - 60);

  // 1. The server creates the domain's file from the senders' schema.
  let server = await startServer(data, port, http);
  procs.push(server);
  for (const name of ["a", "b"]) {
    const s = await sender(port, name, start);
    s.row(0.5);
    await until(`sender ${name}'s row stored`, async () => {
      const r = await fetch(`http://127.0.0.1:${http}/api/v1/domains/${DOMAIN}/streams`);
      const list = r.ok ? await r.json() : [];
      return list.find((x) => x.name === STREAM)?.rows === (name === "a" ? 1 : 2);
    }, 30000);
    await s.close();
  }
  await server.stop();
  const db = join(data, `${DOMAIN}.sq3`);
  const ids = Object.fromEntries(sqlite(db, "SELECT name || '=' || id FROM _senders").split("\n").map((l) => l.split("=")).map(([k, v]) => [k, Number(v)]));
  if (!ids.a || !ids.b) throw new Error(`senders not found in ${db}: ${JSON.stringify(ids)}`);

  // 2. The rows.
  const fillS = await fill(db, ids);
  const total = Number(sqlite(db, `SELECT count(*) FROM ${STREAM}`));
  log(`${total.toLocaleString("en")} rows in ${fillS.toFixed(1)} s; database ${(Number(sqlite(db, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size")) / 1e6).toFixed(0)} MB`);
  server = await startServer(data, port, http);
  procs.push(server);

  // 3. Manager, collector, experiment, dashboard.
  const manager = await startManager(dir);
  procs.push(manager.proc);
  const admin = await Api.login(manager.url, "admin", ADMIN_PASSWORD);
  const collector = (await admin.call("POST", "/devices", { name: "collector", kind: "collector", hostname: "127.0.0.1", port: http, credential_ref: null })).id;
  const exp = await admin.call("POST", "/experiments", { name: DOMAIN, domain: DOMAIN, collector, adopt: true });
  const iso = (t) => new Date(t * 1000).toISOString();
  const plots = [];
  for (const f of FIELDS) {
    for (const s of ["a", "b"]) {
      plots.push({
        version: 1, title: `${STREAM}: ${f} @${s}`, domain: DOMAIN, stream: STREAM, fields: [f], y2: [], senders: [ids[s]],
        from: iso(start), to: iso(Date.now() / 1000), time: "server", derive: "none", points: 1000, timeaxis: "utc",
      });
    }
  }
  plots.length = NPLOTS;
  await admin.call("PUT", `/experiments/${exp.id}/dashboards/bench`, { plots });
  log(`manager ${manager.url}, experiment ${exp.id}, dashboard "bench" of ${plots.length} plots`);

  // 4. First draw, cold then warm.
  browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && console.error(`page console: ${m.text()}`));
  await page.goto(`${manager.url}/login?next=/tokens`);
  await page.fill("#username", "admin");
  await page.fill("#password", ADMIN_PASSWORD);
  await page.click("#login");
  await page.waitForSelector("#token-name");
  const url = `${manager.url}/experiments/${exp.id}/plots`;
  const cold = await firstDraw(page, url, Number(process.env.COLD_TIMEOUT_MS || 900_000));
  log(`cold first draw (the query API builds its tiles): ${drawText(cold)}; points per plot ${cold.points.join(" ")}`);
  const warm = [];
  const warmFailed = [];
  for (let i = 0; i < WARM; i++) {
    const w = await firstDraw(page, url, 120_000);
    if (w.errors.length) warmFailed.push(w);
    else warm.push(w.ms);
    log(`warm first draw ${i + 1}/${WARM}: ${drawText(w)}`);
  }

  // Where the time goes: one plot's rows request as the page makes it
  // (width 1340 px here), timed from here straight to the collector and
  // through the manager, with and without the gaps.
  const timeGet = async (u, headers) => {
    const t = performance.now();
    const r = await fetch(u, { headers });
    const body = await r.text();
    const ms = performance.now() - t;
    if (!r.ok) {
      let code = "";
      try {
        code = ` ${JSON.parse(body).error.code}`;
      } catch {
        // not a JSON error
      }
      return { ms, failed: `${r.status}${code}` };
    }
    return { ms };
  };
  const width = await page.evaluate(() => document.querySelector("div.plot .uplot")?.clientWidth ?? 0);
  const qs = (gaps) => `fields=oml_tuple_id,oml_sender_id,oml_ts_server,f0&points=${Math.max(64, width)}${gaps ? "&gaps=3" : ""}`;
  const cookie = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
  const one = {};
  for (const [name, base, headers] of [["collector", `http://127.0.0.1:${http}/api/v1/domains/${DOMAIN}`, {}], ["manager", `${manager.url}/api/v1/experiments/${exp.id}/query`, { Cookie: cookie }]]) {
    for (const gaps of [true, false]) {
      const t = [];
      for (let i = 0; i < 3; i++) t.push(await timeGet(`${base}/streams/${STREAM}/rows?${qs(gaps)}`, headers));
      const failed = t.find((x) => x.failed);
      one[`${name}${gaps ? " gaps=3" : ""}`] = `${median(t.map((x) => x.ms)).toFixed(0)} ms${failed ? ` (${failed.failed})` : ""}`;
    }
  }
  const oneText = Object.entries(one).map(([k, v]) => `${k} ${v}`).join(", ");
  log(`one plot's rows request (points=${Math.max(64, width)}, median of 3): ${oneText}`);

  // The same, but reloading the page while its plots follow the stream
  // live (Server-Sent Events; the plots of a stream share one, see
  // src/tailhub.ts): Chromium opens at most 6 HTTP/1.1 connections per
  // host, so this shows whether the page can still load then.
  let reload;
  try {
    reload = drawText(await firstDraw(page, url, 20_000, { fromBlank: false }));
  } catch (e) {
    reload = `not drawn within 20 s (${e.message.split("\n")[0].slice(0, 300)})`;
  }
  log(`reload while live: ${reload}`);
  await page.goto("about:blank");
  await firstDraw(page, url, 120_000);

  // 5. Live updates.
  const sel = await page.evaluate(() => [...document.querySelectorAll("div.plot")].map((e) => `${e.dataset.fields} (hidden: ${e.dataset.hidden})`));
  await page.evaluate((mark) => {
    window.__draws = [];
    document.querySelectorAll("div.plot").forEach((el, i) => {
      new MutationObserver(() => {
        const last = JSON.parse(el.dataset.last || "{}");
        const at = Number(el.dataset.drawnAt);
        for (const [label, v] of Object.entries(last)) if (v !== null && v >= mark) window.__draws.push([i, label, v, at]);
      }).observe(el, { attributes: true, attributeFilter: ["data-drawn-at"] });
    });
  }, MARK);
  const live = { a: await sender(port, "a", start), b: await sender(port, "b", start) };
  const sent = []; // [sender, marker, time]
  let marker = MARK;
  const period = 1000 / RATE;
  const t0 = Date.now();
  for (let k = 0; Date.now() - t0 < LIVE_S * 1000; k++) {
    for (const s of ["a", "b"]) {
      marker++;
      sent.push([s, marker, Date.now()]);
      live[s].row(marker, ROWS);
    }
    const next = t0 + (k + 1) * period;
    await sleep(Math.max(0, next - Date.now()));
  }
  const lastMarker = marker;
  await until("the last live rows drawn", async () => {
    const d = await page.evaluate(() => window.__draws);
    return d.filter((x) => x[2] === lastMarker || x[2] === lastMarker - 1).length >= NPLOTS;
  }, 30000).catch((e) => log(`(${e.message})`));
  const draws = await page.evaluate(() => window.__draws);
  await live.a.close();
  await live.b.close();

  // Plot i shows the sender of its definition; a row is drawn on it at the
  // first draw whose last value of that sender's series reached its marker.
  const labelOf = (i) => `${plots[i].fields[0]} @${plots[i].senders[0]}`;
  const lat = [];
  const worstPerRow = [];
  let missed = 0;
  for (const [s, m, t] of sent) {
    let worst = 0;
    for (let i = 0; i < plots.length; i++) {
      if (plots[i].senders[0] !== ids[s]) continue;
      const d = draws.find((x) => x[0] === i && x[1] === labelOf(i) && x[2] >= m);
      if (!d) {
        missed++;
        worst = Infinity;
        continue;
      }
      lat.push(d[3] - t);
      worst = Math.max(worst, d[3] - t);
    }
    if (worst < Infinity) worstPerRow.push(worst);
  }
  const silent = plots.map((_, i) => i).filter((i) => !draws.some((x) => x[0] === i)).map((i) => plots[i].title);
  await ctx.close();

  const ratio = (ms) => `${(ms / WANT_FIRST_DRAW_MS).toFixed(2)}× the wanted ${WANT_FIRST_DRAW_MS} ms`;
  const warmText = warm.length
    ? `warm median ${median(warm).toFixed(0)} ms of ${warm.length} (${ratio(median(warm))}), max ${Math.max(...warm).toFixed(0)} ms`
    : "warm: none drawn";
  const warmFailText = warmFailed.length ? `; ${warmFailed.length} warm load(s) FAILED (${warmFailed[0].errors[0]})` : "";
  console.log("");
  console.log(`# dashboard of ${NPLOTS} plots over ${total.toLocaleString("en")} rows (binary ${BIN})`);
  console.log(`# plots: ${sel.join("; ")}`);
  console.log(`# first draw, navigation → all ${NPLOTS} plots drawn: cold ${drawText(cold)}${cold.errors.length ? "" : ` (${ratio(cold.ms)})`}; ${warmText}${warmFailText}`);
  console.log(`# one plot's rows request alone (as the page asks it, median of 3): ${oneText}`);
  console.log(`# the same page loaded over itself while its plots follow live (their live tails open): ${reload}`);
  const latText = lat.length
    ? `median ${median(lat)} ms (${(median(lat) / WANT_LATENCY_MS).toFixed(2)}× the wanted ${WANT_LATENCY_MS} ms), p90 ${q(lat, 0.9)} ms, max ${Math.max(...lat)} ms`
    : "NONE drawn";
  console.log(`# live update, ${sent.length} rows (${RATE}/s from each of 2 senders for ${LIVE_S} s), send → drawn on each plot showing the sender (${lat.length} draws, ${missed} not drawn): ` +
    `${latText}; ` +
    `a row on all plots of its sender (${worstPerRow.length} rows drawn on all): median ${median(worstPerRow) ?? "-"} ms, p90 ${q(worstPerRow, 0.9) ?? "-"} ms`);
  console.log(`# plots that drew no live row: ${silent.length ? silent.join(", ") : "none"}`);
  console.log(`# machine load (1, 5, 15 min): ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
} catch (e) {
  for (const p of procs) if (p.out) console.error(`--- ${p.name}:\n${p.out.slice(-3000)}`);
  console.error(e);
  process.exitCode = 1;
} finally {
  await browser?.close().catch(() => {});
  for (const p of procs.reverse()) await p.stop().catch(() => {});
  if (opt.keep) console.log(`kept ${dir}`);
  else removeDir(dir);
}
