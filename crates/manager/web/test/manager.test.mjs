// The manager's web front end in headless Chromium against real
// components: collection server, capture daemon on a veth pair inside
// namespaces this test creates (and deletes), the manager, and a
// client-library stream (`streamgauge wrap run`). Assertions are on what
// a person sees: rendered counters, the points uPlot holds and the values
// it shows, downloaded file bytes, error messages beside fields.
//
//   STREAMGAUGE_BIN=target/release/streamgauge npm --prefix crates/manager/web test

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  Api, ADMIN_PASSWORD, DEVICE_CREDENTIAL, DEVICE_TOKEN, Proc, BIN, launchBrowser, makeNetns, makeNetns6, missing, packetFileKind, readFileSync, removeDir,
  screenshot, sleep, startCapture, startInline, startManager, startServer, tempDir, traffic, until,
} from "./harness.mjs";

const why = missing();
const PASS = { alice: "alice-pass-123456", bob: "bob-pass-123456", carol: "carol-pass-123456" };

describe("manager web front end", { skip: why ?? false }, () => {
  let dir, ns, server, capture, manager, admin, browser, ping, feed;
  const ids = {};
  const procs = () => [manager?.proc, capture?.proc, server?.proc, ping, feed].filter(Boolean);

  before(async () => {
    dir = tempDir("flow");
    ns = makeNetns(String(process.pid));
    try {
      server = await startServer(dir);
      capture = await startCapture(dir, ns, server.port);
      manager = await startManager(dir);
      admin = await Api.login(manager.url, "admin", ADMIN_PASSWORD);
      for (const u of ["alice", "bob", "carol"]) await admin.call("POST", "/users", { username: u, password: PASS[u], role: "user" });
      const site = await admin.call("POST", "/sites", { name: "lab", description: "the test bench" });
      ids.site = site.id;
      const col = await admin.call("POST", "/devices", { name: "collector", kind: "collector", site: site.id, hostname: "127.0.0.1", port: server.http, description: "collection server", credential_ref: null });
      ids.collector = col.id;
      const tap = await admin.call("POST", "/devices", { name: "tap", kind: "capture", site: site.id, hostname: "127.0.0.1", port: capture.api, description: "veth tap", credential_ref: DEVICE_CREDENTIAL });
      ids.tap = tap.id;
      await admin.call("POST", `/devices/${tap.id}/refresh`, {});
      await admin.call("POST", `/devices/${col.id}/refresh`, {}).catch(() => {});
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

  const login = async (ctx, user, password) => {
    const page = await ctx.newPage();
    page.on("pageerror", (e) => console.error(`page error (${user}): ${e.message}`));
    await page.goto(`${manager.url}/`);
    await page.waitForURL(/\/login/);
    await page.fill("#username", user);
    await page.fill("#password", password);
    await page.click("#login");
    await page.waitForSelector("#experiment-form");
    return page;
  };

  test("a user runs a capture from the browser: configuration, start, live counters and plot, stop, file download, log out", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    const page = await ctx.newPage();
    await page.goto(`${manager.url}/experiments`);
    await page.waitForSelector("#login-form");
    await screenshot(page, "login");
    await page.close();
    const p = await login(ctx, "alice", PASS.alice);
    assert.match(await p.textContent("#whoami"), /alice/);

    // Experiment, with the collection server for its streams.
    await p.fill("#exp-name", "web-flow");
    await p.selectOption("#exp-collector", String(ids.collector));
    await p.click("#exp-create");
    await p.waitForURL(/\/experiments\/\d+$/);
    ids.exp = Number(new URL(p.url()).pathname.split("/").pop());
    await p.waitForSelector("h1:has-text('web-flow')");

    // Members: add carol, see her, remove her.
    await p.fill("#member-name", "carol");
    await p.click("#member-form button[type=submit]");
    await p.waitForSelector("li[data-member=carol]");
    await p.click("li[data-member=carol] button");
    await p.waitForSelector("li[data-member=carol]", { state: "detached" });

    // Capture configuration: a snap length above the device's maximum is
    // refused, and the message stands beside the snap length field.
    await p.click("#new-config");
    await p.waitForSelector("#config-form");
    await p.fill("#cfg-name", "ping-capture");
    await p.selectOption("#cfg-site", String(ids.site));
    await p.selectOption("#cfg-device", String(ids.tap));
    await p.selectOption("#cfg-interface", "sgw0");
    await p.fill("#cfg-snaplen", "9000");
    await p.fill("#cfg-counter-interval", "1");
    await p.fill("#cfg-proto", "icmp");
    await p.click("#cfg-meta-add");
    await p.fill(".meta-row .meta-key", "purpose");
    await p.fill(".meta-row .meta-value", "browser test");
    await p.click("#cfg-save");
    const err = await p.waitForSelector('.field[data-path="session.snaplen"] .field-error');
    assert.match(await err.textContent(), /4096/, "the policy's maximum is named next to the field");
    await screenshot(p, "config-invalid");
    await p.fill("#cfg-snaplen", "256");
    await p.check("#cfg-header-only");
    await p.click("#cfg-save");
    await p.waitForSelector(".msg.info:has-text('Saved')");
    assert.equal(await p.locator(".field-error").count(), 0, "no field error left after a valid save");
    assert.match(p.url(), /\/configs\/\d+$/);
    ids.config = Number(new URL(p.url()).pathname.split("/").pop());
    const saved = await admin.call("GET", `/configs/${ids.config}`);
    assert.equal(saved.session.snaplen, 256);
    assert.equal(saved.session.shortcuts.proto, "icmp");
    assert.equal(saved.metadata.purpose, "browser test");
    await screenshot(p, "config");

    // Run: create and start on the tap while ping flows through the veth.
    ping = traffic(ns);
    await p.goto(`${manager.url}/experiments/${ids.exp}`);
    await p.waitForSelector("#run-create-start");
    await p.selectOption("#run-config", String(ids.config));
    assert.ok(await p.isChecked(`#run-devices input[value="${ids.tap}"]`), "the configuration's device is chosen");
    await p.click("#run-create-start");
    await p.waitForURL(/\/runs\/\d+/);
    ids.run = Number(new URL(p.url()).pathname.split("/").pop());
    await p.waitForSelector(".run-head [data-state=running]");

    // Counters grow on the page.
    const stored = async () => Number(((await p.textContent(`tr[data-device="${ids.tap}"] td[data-counter=stored]`)) ?? "").replace(/[^0-9]/g, "") || 0);
    const s1 = await until("the stored counter to be above 0", stored);
    const s2 = await until("the stored counter to grow", async () => ((await stored()) > s1 ? stored() : 0));
    assert.ok(s2 > s1);

    // A live plot of the daemon's counters stream grows as rows arrive.
    await until("the capture_counters stream on the collector", async () => {
      const list = await admin.call("GET", `/experiments/${ids.exp}/streams`);
      return (Array.isArray(list) ? list : list.streams ?? []).some((s) => s.name === "capture_counters");
    });
    await p.goto(`${manager.url}/runs/${ids.run}`);
    await p.waitForSelector("#plot-stream");
    await p.selectOption("#plot-stream", "capture_counters");
    for (const box of await p.$$("#plot-fields input")) await box.uncheck();
    await p.check('#plot-fields input[value="stored"]');
    await p.click("#plot-add");
    const plot = 'div.plot[data-stream="capture_counters"]';
    const points = async () => Number(await p.getAttribute(plot, "data-points"));
    const n1 = await until("points in the counters plot", points);
    const n2 = await until("the counters plot to grow", async () => ((await points()) > n1 ? points() : 0), 20000);
    assert.ok(n2 > n1, `plot grew from ${n1} to ${n2} points`);
    const last = JSON.parse(await p.getAttribute(plot, "data-last"));
    assert.ok(last.stored > 0, `the plotted value of stored is ${last.stored}`);
    assert.match(await p.textContent(`${plot} .plot-status`), /stored = \d/);
    await until("the log to show the run", async () => /start|running/i.test(await p.textContent("#run-log")));
    await screenshot(p, "results");

    // Stop, then download a produced file: its bytes are pcapng.
    await p.click(".run-head button.run-stop");
    await p.waitForSelector(".run-head [data-state=stopped]", { timeout: 20000 });
    ping.stop();
    const link = await until("a packet file in the file list", async () => {
      await p.reload();
      return p.waitForSelector("#file-table a.file[download$='.pcapng']", { timeout: 3000 });
    }, 30000, 500);
    const [download] = await Promise.all([p.waitForEvent("download"), link.click()]);
    const bytes = readFileSync(await download.path());
    assert.equal(packetFileKind(bytes), "pcapng", `downloaded ${download.suggestedFilename()}: ${bytes.subarray(0, 8).toString("hex")}`);
    assert.ok(bytes.length > 100, `${bytes.length} bytes`);

    // CSV of the plot's visible range.
    const csvHref = await p.getAttribute(`${plot} a[data-format=csv]`, "href");
    assert.match(csvHref, /format=csv/);
    const csv = await p.evaluate(async (u) => (await fetch(u)).text(), csvHref);
    assert.match(csv.split("\n")[0], /stored/);
    assert.ok(csv.trim().split("\n").length > 2, "the CSV holds rows");

    // Log out: the pages ask for a login again.
    await p.click("#logout");
    await p.waitForSelector("#login-form");
    await p.goto(`${manager.url}/runs/${ids.run}`);
    await p.waitForSelector("#login-form");
    await ctx.close();
  });

  test("another user cannot see the experiment, and a request without the CSRF token is refused", async () => {
    assert.ok(ids.exp, "the first test created the experiment");
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const p = await login(ctx, "bob", PASS.bob);
    await p.waitForSelector("#experiment-list :is(table, p)");
    assert.equal(await p.locator("#experiment-list a", { hasText: "web-flow" }).count(), 0, "bob's list does not show alice's experiment");
    await p.goto(`${manager.url}/experiments/${ids.exp}`);
    const msg = await p.waitForSelector(".msg.error");
    assert.match(await msg.textContent(), /no experiment|not found/i);
    await p.goto(`${manager.url}/runs/${ids.run}`);
    await p.waitForSelector(".msg.error");

    // The session cookie alone does not make a state-changing request.
    const without = await p.evaluate(async () => {
      const r = await fetch("/api/v1/experiments", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "csrf-probe" }) });
      return { status: r.status, body: await r.json() };
    });
    assert.equal(without.status, 403);
    assert.equal(without.body.error.code, "csrf_failed");
    const withToken = await p.evaluate(async () => {
      const s = await (await fetch("/api/v1/session")).json();
      const r = await fetch("/api/v1/experiments", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": s.csrf_token }, body: JSON.stringify({ name: "bob-own" }) });
      return r.status;
    });
    assert.equal(withToken, 201, "the same request with the token is accepted");
    await ctx.close();
  });

  test("concurrent edits of one configuration: the second save is shown as a conflict, not lost", async () => {
    assert.ok(ids.config);
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const a = await login(ctx, "alice", PASS.alice);
    const b = await ctx.newPage();
    await a.goto(`${manager.url}/configs/${ids.config}`);
    await b.goto(`${manager.url}/configs/${ids.config}`);
    await a.waitForSelector("#config-form #cfg-name");
    await b.waitForSelector("#config-form #cfg-name");
    await until("the form to be filled", async () => (await b.inputValue("#cfg-snaplen")) === "256");
    await a.fill("#cfg-snaplen", "300");
    await a.click("#cfg-save");
    await a.waitForSelector(".msg.info:has-text('Saved')");
    await b.fill("#cfg-snaplen", "400");
    await b.click("#cfg-save");
    const c = await b.waitForSelector("#conflict:not([hidden])");
    assert.match(await c.textContent(), /changed meanwhile/);
    await screenshot(b, "config-conflict");
    assert.equal((await admin.call("GET", `/configs/${ids.config}`)).session.snaplen, 300, "the first save stands");
    await b.click("#conflict-load");
    assert.equal(await b.inputValue("#cfg-snaplen"), "300", "the stored version is loaded");
    await ctx.close();
  });

  test("admin pages: devices with capabilities, users, tokens", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const p = await login(ctx, "admin", ADMIN_PASSWORD);
    await p.goto(`${manager.url}/admin/devices`);
    const row = await p.waitForSelector(`tr[data-device="${ids.tap}"]`);
    assert.match(await row.textContent(), /sgw0/, "the tap's interface from its capabilities");
    await p.click(`tr[data-device="${ids.tap}"] button[data-action=refresh]`);
    await p.waitForSelector(".msg.info:has-text('refreshed')");
    assert.equal((await (await p.waitForSelector(`tr[data-device="${ids.tap}"] .transport`)).textContent()), "http · local", "plain HTTP on loopback is labelled, not flagged");
    // Plain HTTP beyond loopback needs the admin's "insecure", and is flagged.
    // (0.0.0.0 is not a loopback address, yet Linux delivers it on this host.)
    const far = await admin.call("POST", "/devices", { name: "tap-far", kind: "capture", hostname: "0.0.0.0", port: capture.api, credential_ref: DEVICE_CREDENTIAL, insecure: true });
    await p.reload();
    const badge = await p.waitForSelector(`tr[data-device="${far.id}"] [data-insecure]`);
    assert.match(await badge.textContent(), /insecure/);
    assert.match(await badge.getAttribute("title"), /in clear/);
    await screenshot(p, "devices");
    await p.goto(`${manager.url}/admin/users`);
    await p.waitForSelector("tr[data-user=alice]");
    await screenshot(p, "users");
    await p.goto(`${manager.url}/tokens`);
    await p.fill("#token-name", "ci-script");
    await p.click("#token-form button");
    const secret = await (await p.waitForSelector("#token-secret code.secret")).textContent();
    assert.ok(secret.length >= 16, "the secret is shown once");
    const r = await fetch(`${manager.url}/api/v1/experiments`, { headers: { Authorization: `Bearer ${secret}` } });
    assert.equal(r.status, 200, "the token works for scripts");
    await screenshot(p, "tokens");
    await ctx.close();
  });

  test("client-library stream: live plot, live-update latency and first paint of a results page with 4 live plots", async () => {
    assert.ok(ids.run);
    const exp = await admin.call("GET", `/experiments/${ids.exp}`);
    // A real client of the streamgauge client library: `wrap run` reads the
    // JSON lines `cat` echoes from our pipe and sends each as a row.
    feed = new Proc("feed", ["wrap", "run", "--schema", "seq:int64 value:double", "--jsonl", "--app", "feed", "--mp", "live", "--version-flag", "none",
      "--oml-collect", `tcp://127.0.0.1:${server.port}`, "--oml-domain", exp.domain, "--", "cat"]);
    let seq = 0;
    const send = (value) => feed.child.stdin.write(`${JSON.stringify({ seq: ++seq, value })}\n`);
    for (let i = 0; i < 50; i++) send(Math.sin(i / 5));
    await until("the feed_live stream on the collector", async () => {
      const list = await admin.call("GET", `/experiments/${ids.exp}/streams`);
      return (Array.isArray(list) ? list : list.streams ?? []).some((s) => s.name === "feed_live" && s.rows >= 50);
    }, 30000, 200);

    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const p = await login(ctx, "alice", PASS.alice);
    await p.goto(`${manager.url}/experiments/${ids.exp}/plots?plot=feed_live:value`);
    const plot = 'div.plot[data-stream="feed_live"]';
    // A burst of 50 rows within milliseconds: downsampled (M4) to the
    // first, last, lowest and highest of each time bucket.
    const p0 = await until("feed_live drawn", async () => Number(await p.getAttribute(plot, "data-points")));

    // Live-update latency: a row written by the client → the point drawn.
    const lat = [];
    for (let i = 1; i <= 20; i++) {
      const value = 1000 + i;
      const t0 = Date.now();
      send(value);
      await p.waitForFunction(([sel, v]) => {
        const el = document.querySelector(sel);
        return el && JSON.parse(el.dataset.last || "{}").value === v;
      }, [plot, value], { timeout: 15000, polling: "raf" });
      const drawn = Number(await p.getAttribute(plot, "data-drawn-at"));
      lat.push(drawn - t0);
      await sleep(150);
    }
    assert.equal(Number(await p.getAttribute(plot, "data-points")), p0 + 20, "every live row is plotted");
    assert.match(await p.textContent(`${plot} .plot-status`), /value = 1020/);
    await screenshot(p, "live-plot");

    // First paint of the results page with 4 live plots (data drawn in all 4).
    const url = `${manager.url}/runs/${ids.run}?` + ["feed_live:value", "feed_live:seq", "capture_counters:stored", "capture_counters:seen"].map((x) => `plot=${encodeURIComponent(x)}`).join("&");
    const paints = [];
    for (let i = 0; i < 5; i++) {
      await p.goto(url);
      await p.waitForFunction(() => {
        const plots = [...document.querySelectorAll("div.plot")];
        return plots.length === 4 && plots.every((e) => Number(e.dataset.points) > 0);
      }, null, { timeout: 20000, polling: "raf" });
      const m = await p.evaluate(() => {
        const plots = [...document.querySelectorAll("div.plot")];
        const drawn = Math.max(...plots.map((e) => Number(e.dataset.drawnAt)));
        const fcp = performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN;
        return { plots: drawn - performance.timeOrigin, fcp };
      });
      paints.push(m);
    }
    await screenshot(p, "results-4-plots");
    await ctx.close();

    const q = (a, f) => {
      const s = [...a].sort((x, y) => x - y);
      return s[Math.min(s.length - 1, Math.floor(f * s.length))];
    };
    const plotsMs = paints.map((m) => m.plots);
    const fcpMs = paints.map((m) => m.fcp);
    console.log(`# live-update latency (row written by the client → point drawn), 20 rows: median ${q(lat, 0.5)} ms, p90 ${q(lat, 0.9)} ms, max ${Math.max(...lat)} ms`);
    console.log(`# results page with 4 live plots, 5 loads: first contentful paint median ${q(fcpMs, 0.5).toFixed(0)} ms; all 4 plots drawn with data median ${q(plotsMs, 0.5).toFixed(0)} ms, max ${Math.max(...plotsMs).toFixed(0)} ms`);
    console.log(`# binary: ${BIN}`);
  });

  test("in-line agents: the configuration made in the form (field errors, save, load, copy, edit), a run started from the browser applies it, the agent's counters grow on the run page, the in-line stream is plotted live", async () => {
    const net = makeNetns6(String(process.pid));
    const local = [];
    try {
      const exp = await admin.call("POST", "/experiments", { name: "inline web", collector: ids.collector });
      // The source starts switched off: only the run switches it on.
      const src = await startInline("source", net.a, "va", ["--set", "proto=udp", "--set", "enabled=false"]);
      local.push(src.proc);
      const sink = await startInline("sink", net.b, "vb", ["--collect", `tcp:127.0.0.1:${server.port}`, "--domain", exp.domain]);
      local.push(sink.proc);
      const dev = await admin.call("POST", "/devices", { name: "inline-src", kind: "inline", hostname: "127.0.0.1", port: src.api, description: "in-line source", credential_ref: DEVICE_CREDENTIAL });
      const refreshed = await admin.call("POST", `/devices/${dev.id}/refresh`, {});
      assert.deepEqual(refreshed.capabilities.roles, ["source"]);
      const ping6 = new Proc("ping6", ["netns", "exec", net.a, "ping", "-6", "-i", "0.05", "-s", "64", net.peer], { bin: "ip" });
      local.push(ping6);

      const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const p = await login(ctx, "admin", ADMIN_PASSWORD);

      // The form shows the agent's settings instead of the capture fields.
      await p.goto(`${manager.url}/experiments/${exp.id}/configs/new`);
      await p.waitForSelector("#config-form");
      await p.fill("#cfg-name", "icmp-every-packet");
      await p.selectOption("#cfg-device", String(dev.id));
      await p.waitForSelector("#inline-settings:not([hidden]) #inl-sample");
      assert.equal(await p.isVisible("#cfg-snaplen"), false, "no capture fields for an in-line agent");
      const modes = await p.$$eval("#inl-mode option", (os) => os.map((o) => o.value).filter(Boolean));
      assert.deepEqual(modes, refreshed.capabilities.modes, "the agent's modes are offered");
      assert.match(await p.textContent("#cfg-caps"), /In-line source on va/);
      await p.fill("#inl-proto", "icmpv6");
      // A bad value is caught in the form, beside its field, before anything is sent.
      await p.fill("#inl-sample", "0");
      await p.click("#cfg-save");
      const own = await p.waitForSelector('.field[data-path="session.sample"] .field-error');
      assert.match(await own.textContent(), />= 1/);
      assert.equal((await admin.call("GET", `/experiments/${exp.id}/configs`)).length, 0, "nothing saved");
      // A key the agent does not have is refused by the manager (400
      // invalid_config), and its message stands beside the field it came from.
      await p.fill("#inl-sample", "1");
      await p.fill("#inl-other", "bogus=1");
      await p.click("#cfg-save");
      const theirs = await p.waitForSelector('.field[data-path="session"] .field-error[data-error-for="session.bogus"]');
      assert.match(await theirs.textContent(), /no setting "bogus"/);
      assert.equal(await p.locator('.field[data-path="session.sample"] .field-error').count(), 0);
      await screenshot(p, "config-inline-invalid");
      await p.fill("#inl-other", "");
      await p.click("#cfg-save");
      await p.waitForSelector(".msg.info:has-text('Saved')");
      const cfgId = Number(new URL(p.url()).pathname.split("/").pop());
      const cfg = await admin.call("GET", `/configs/${cfgId}`);
      assert.deepEqual(cfg.session, { proto: "icmpv6", sample: 1 });
      assert.equal(cfg.storage.type, "local", "an agent keeps no files");
      // Loaded again, the form holds what was saved.
      await p.goto(`${manager.url}/configs/${cfgId}`);
      await p.waitForSelector("#inline-settings:not([hidden])");
      assert.equal(await p.inputValue("#inl-proto"), "icmpv6");
      assert.equal(await p.inputValue("#inl-sample"), "1");
      assert.equal(await p.inputValue("#inl-other"), "");
      await screenshot(p, "config-inline");
      // Copy, then edit the copy: the copy holds the settings, the original stays as saved.
      p.once("dialog", (d) => d.accept("icmp-one-in-two"));
      await p.click("#cfg-copy");
      await p.waitForFunction(() => document.querySelector("#cfg-name")?.value === "icmp-one-in-two");
      const copyId = Number(new URL(p.url()).pathname.split("/").pop());
      assert.notEqual(copyId, cfgId);
      assert.equal(await p.inputValue("#inl-proto"), "icmpv6");
      await p.fill("#inl-sample", "2");
      await p.click("#cfg-save");
      await p.waitForSelector(".msg.info:has-text('Saved (version')");
      assert.deepEqual((await admin.call("GET", `/configs/${copyId}`)).session, { proto: "icmpv6", sample: 2 });
      assert.deepEqual((await admin.call("GET", `/configs/${cfgId}`)).session, { proto: "icmpv6", sample: 1 });

      // Run: created and started on the experiment page, on the in-line agent.
      await p.goto(`${manager.url}/experiments/${exp.id}`);
      await p.waitForSelector("#run-create-start");
      await p.selectOption("#run-config", String(cfgId));
      assert.ok(await p.isChecked(`#run-devices input[value="${dev.id}"]`), "the configuration's agent is chosen");
      assert.equal(await p.locator(`#run-devices input[value="${ids.tap}"]`).count(), 0, "capture daemons are not offered for an in-line configuration");
      await p.click("#run-create-start");
      await p.waitForURL(/\/runs\/\d+/);
      const runId = Number(new URL(p.url()).pathname.split("/").pop());
      await p.waitForSelector(".run-head [data-state=running]", { timeout: 20000 });
      const agent = await (await fetch(`http://127.0.0.1:${src.api}/api/v1/settings`, { headers: { Authorization: `Bearer ${DEVICE_TOKEN}` } })).json();
      assert.equal(agent.proto, "58", "the run's settings are on the agent");
      assert.equal(agent.enabled, "true");

      // The agent's counters, live in the run page's in-line table.
      const row = `table.counters[data-kind=inline] tr[data-device="${dev.id}"]`;
      const counter = async (k) => Number(((await p.textContent(`${row} td[data-counter=${k}]`)) ?? "").replace(/[^0-9]/g, "") || 0);
      const i1 = await until("the instrumented counter to be above 0", () => counter("instrumented"));
      const i2 = await until("the instrumented counter to grow", async () => ((await counter("instrumented")) > i1 ? counter("instrumented") : 0), 20000);
      assert.ok(i2 > i1, `instrumented ${i1} → ${i2}`);
      assert.ok((await counter("matched")) >= i2, "matched counts at least the instrumented packets");
      assert.equal(await p.textContent(`${row} td[data-counter=skipped]`), "0", "1 in 1: nothing skipped");
      const heads = await p.$$eval("table.counters[data-kind=inline] th", (ts) => ts.map((t) => t.textContent));
      assert.ok(heads.includes("instrumented") && heads.includes("skipped"), `in-line columns: ${heads}`);
      assert.ok(!heads.includes("stored"), "no capture columns for an agent");
      await screenshot(p, "run-inline");

      const stream = "inline_inline_delay";
      await until(`the ${stream} stream on the collector`, async () => {
        const list = await admin.call("GET", `/experiments/${exp.id}/streams`);
        return (Array.isArray(list) ? list : list.streams ?? []).some((s) => s.name === stream && s.rows >= 5);
      }, 30000, 200);
      await p.goto(`${manager.url}/experiments/${exp.id}/plots?plot=${stream}:delay`);
      const plot = `div.plot[data-stream="${stream}"]`;
      const points = async () => Number(await p.getAttribute(plot, "data-points"));
      const n1 = await until("points in the in-line delay plot", points);
      const n2 = await until("the in-line plot to grow", async () => ((await points()) > n1 ? points() : 0), 20000);
      assert.ok(n2 > n1, `plot grew from ${n1} to ${n2} points`);
      const last = JSON.parse(await p.getAttribute(plot, "data-last"));
      assert.ok(last.delay > 0 && last.delay < 0.5, `the plotted one-way delay is ${last.delay} s`);
      assert.match(await p.textContent(`${plot} .plot-status`), /delay = /);
      // Delays of microseconds: the y axis is labelled with SI prefixes, not all "0".
      const ticks = JSON.parse(await p.getAttribute(plot, "data-y-ticks"));
      assert.ok(ticks.length >= 2, `y ticks ${ticks}`);
      assert.equal(new Set(ticks).size, ticks.length, `distinct y tick labels: ${ticks}`);
      assert.ok(ticks.some((t) => !/^-?0(\.0*)?( |$)/.test(t)), `y ticks not all zero: ${ticks}`);
      const status = await p.textContent(`${plot} .plot-status`);
      assert.doesNotMatch(status, /delay = 0( |$)/, `the legend's value is not rounded to 0: ${status}`);
      console.log(`# in-line delay plot: y ticks ${ticks.join(" | ")}; ${status}`);
      await screenshot(p, "inline-plot");

      // Pause from the run page: the source stops measuring, the plot stops growing.
      await p.goto(`${manager.url}/runs/${runId}`);
      await p.click(".run-head button.run-pause");
      await p.waitForSelector(".run-head [data-state=paused]", { timeout: 20000 });
      const paused = await (await fetch(`http://127.0.0.1:${src.api}/api/v1/status`, { headers: { Authorization: `Bearer ${DEVICE_TOKEN}` } })).json();
      assert.equal(paused.state, "paused");
      const before = paused.counters.instrumented;
      await sleep(1000);
      const after = (await (await fetch(`http://127.0.0.1:${src.api}/api/v1/status`, { headers: { Authorization: `Bearer ${DEVICE_TOKEN}` } })).json()).counters.instrumented;
      assert.equal(after, before, "nothing measured while paused");
      await ctx.close();
    } catch (e) {
      for (const p of local) if (p.out) console.error(`--- ${p.name}:\n${p.out.slice(-3000)}`);
      throw e;
    } finally {
      for (const p of local) await p.stop().catch(() => {});
      net.cleanup();
    }
  });
});
