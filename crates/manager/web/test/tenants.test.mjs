// Tenant isolation as a person sees it: bob logs in through the login page
// and goes to alice's experiment, plots, configuration and run (results and
// files) by URL, through the page's own router, and through the API from
// the page; he must see a not-found or forbidden message, and none of the
// marker strings planted in alice's data may appear in the DOM or in any
// response the page received. Real collection server (alice's stream and
// rows) and manager from STREAMGAUGE_BIN; the API-level suite with a real
// capture daemon is crates/manager/tests/tenants.rs.
//
//   STREAMGAUGE_BIN=target/debug/streamgauge npm --prefix crates/manager/web test

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { Api, ADMIN_PASSWORD, launchBrowser, missing, removeDir, startManager, startServer, tempDir, until } from "./harness.mjs";

const why = missing();
const TAG = "wq4tn";
const A = {
  name: `Alice ${TAG} study`,
  domain: `alicedom_${TAG}`,
  description: `alicedesc_${TAG}`,
  config: `alicecfg_${TAG}`,
  meta: `alicemeta_${TAG}`,
  stream: `alicestream_${TAG}`,
  row: `alicerow_${TAG}`,
};
const PASS = { alice: "alice-pass-123456", bob: "bob-pass-123456" };

/** One row carrying `marker` in stream `stream` of `domain` (OMSP text). */
function feed(port, domain, stream, marker) {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => {
      s.end(`protocol: 5\ndomain: ${domain}\nstart-time: 1700000000\nsender-id: s\napp-name: t\n` +
        `schema: 1 ${stream} s:string\ncontent: text\n\n0.5\t1\t0\t${marker}\n`);
    });
    s.on("close", resolve);
    s.on("error", reject);
  });
}

describe("tenant isolation in the browser", { skip: why ?? false }, () => {
  let dir, server, manager, browser;
  const ids = {};
  const markers = [TAG, ...Object.values(A)];

  before(async () => {
    dir = tempDir("tenants");
    try {
      server = await startServer(dir);
      manager = await startManager(dir);
      const admin = await Api.login(manager.url, "admin", ADMIN_PASSWORD);
      for (const u of ["alice", "bob"]) await admin.call("POST", "/users", { username: u, password: PASS[u], role: "user" });
      ids.collector = (await admin.call("POST", "/devices", { name: "collector", kind: "collector", hostname: "127.0.0.1", port: server.http, credential_ref: null })).id;
      // A capture device nobody runs: configurations and runs are kept
      // without it answering.
      ids.tap = (await admin.call("POST", "/devices", { name: "tap", kind: "capture", hostname: "127.0.0.1", port: 9, credential_ref: null })).id;

      const alice = await Api.login(manager.url, "alice", PASS.alice);
      const e = await alice.call("POST", "/experiments", { name: A.name, domain: A.domain, collector: ids.collector, description: A.description });
      ids.exp = e.id;
      const c = await alice.call("POST", `/experiments/${e.id}/configs`, {
        name: A.config, device: ids.tap, session: { interface: "lo" }, storage: { type: "local" }, metadata: { purpose: A.meta },
      });
      ids.config = c.id;
      const r = await alice.call("POST", `/experiments/${e.id}/runs`, { config: c.id });
      ids.run = r.id;
      ids.session = r.devices[0].session;
      markers.push(ids.session);
      await feed(server.port, A.domain, A.stream, A.row);
      await until("alice's row on the collector", async () => {
        const t = await (await fetch(`http://127.0.0.1:${server.http}/api/v1/domains/${A.domain}/streams/${A.stream}/rows`)).text();
        return t.includes(A.row);
      });
      // The row is there for alice, through the manager (or nothing below could fail).
      const rows = await alice.call("GET", `/experiments/${e.id}/query/streams/${A.stream}/rows`);
      assert.ok(JSON.stringify(rows).includes(A.row));
      // The collector's capabilities now name the domains it holds.
      await admin.call("POST", `/devices/${ids.collector}/refresh`, {});
      const col = await admin.call("GET", `/devices/${ids.collector}`);
      assert.ok(JSON.stringify(col).includes(A.domain), "the admin sees alice's domain on the collector");

      const bob = await Api.login(manager.url, "bob", PASS.bob);
      ids.bobExp = (await bob.call("POST", "/experiments", { name: "bob study", domain: "bobdom", collector: ids.collector })).id;
      browser = await launchBrowser();
    } catch (e) {
      for (const p of [manager?.proc, server?.proc]) if (p?.out) console.error(`--- ${p.name}:\n${p.out.slice(-3000)}`);
      throw e;
    }
  });

  after(async () => {
    await browser?.close().catch(() => {});
    for (const p of [manager?.proc, server?.proc]) await p?.stop().catch(() => {});
    if (dir) removeDir(dir);
  });

  test("bob finds no trace of alice's experiment: by URL, through the page's router and its API calls", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const page = await ctx.newPage();
    // Every answer the page gets (bodies of finished responses; tails are
    // cut after a second, they stream).
    const seen = [];
    const pending = [];
    page.on("response", (resp) => {
      pending.push((async () => {
        const head = `${resp.status()} ${resp.url()}\n${JSON.stringify(await resp.allHeaders())}`;
        const body = await Promise.race([resp.text().catch(() => ""), new Promise((r) => setTimeout(() => r(""), 1000))]);
        seen.push({ url: resp.url(), text: `${head}\n${body}` });
      })());
    });
    const leaks = (text) => markers.filter((m) => text.includes(m));
    // What bob typed himself (a URL naming alice's stream) may be shown
    // back to him; nothing else of alice's may.
    const domClean = async (where, typed = "") => {
      const html = await page.content();
      const found = leaks(html).filter((m) => !typed.includes(m));
      assert.deepEqual(found, [], `${where}: alice's markers in the DOM`);
    };

    await page.goto(`${manager.url}/`);
    await page.waitForURL(/\/login/);
    await page.fill("#username", "bob");
    await page.fill("#password", PASS.bob);
    await page.click("#login");
    await page.waitForSelector("#experiment-form");
    await page.waitForSelector(`a[href="/experiments/${ids.bobExp}"]`);
    await domClean("experiments list");

    const notFound = async (path, re) => {
      await page.goto(`${manager.url}${path}`);
      const alert = page.locator("#app [role=alert]:visible").first();
      await alert.waitFor();
      assert.match(await alert.textContent(), re, path);
      await domClean(path, path);
    };
    const hidden = /\(or you may not see it\)/;
    // By URL.
    await notFound(`/experiments/${ids.exp}`, hidden);
    await notFound(`/experiments/${ids.exp}/plots`, hidden);
    await notFound(`/experiments/${ids.exp}/plots?plot=${A.stream}:s`, hidden);
    await notFound(`/configs/${ids.config}`, hidden);
    await notFound(`/runs/${ids.run}`, hidden);
    await notFound("/admin/users", /admin/i);
    await notFound("/admin/audit", /admin/i);

    // Through the page's router, as a link would take him.
    for (const path of [`/experiments/${ids.exp}`, `/runs/${ids.run}`, `/configs/${ids.config}`]) {
      await page.goto(`${manager.url}/experiments`);
      await page.waitForSelector("#experiment-form");
      await page.evaluate((p) => {
        history.pushState(null, "", p);
        dispatchEvent(new PopStateEvent("popstate"));
      }, path);
      const alert = page.locator("#app [role=alert]:visible").first();
      await alert.waitFor();
      assert.match(await alert.textContent(), hidden, path);
      await domClean(`${path} (router)`);
    }

    // His own pages that show shared things: devices, his experiment and plots.
    await page.goto(`${manager.url}/admin/devices`);
    await page.waitForSelector(`tr[data-device="${ids.collector}"]`);
    await domClean("devices");
    await page.goto(`${manager.url}/experiments/${ids.bobExp}/plots?plot=${A.stream}:s`);
    await page.waitForSelector("#plot-chooser");
    await page.waitForTimeout(1500);
    await domClean("his plots, asking for alice's stream", A.stream);

    // The API and downloads, from the page (what a script in it could read).
    const direct = await page.evaluate(async ({ ids, A }) => {
      const paths = [
        `/api/v1/experiments/${ids.exp}`,
        `/api/v1/experiments/${ids.exp}/streams`,
        `/api/v1/experiments/${ids.exp}/query/streams/${A.stream}/rows`,
        `/api/v1/experiments/${ids.exp}/query/streams/${A.stream}/tail`,
        `/api/v1/experiments/${ids.bobExp}/query/%252e%252e/${A.domain}/streams/${A.stream}/rows`,
        `/api/v1/experiments/${ids.bobExp}/query/streams/${A.stream}/rows`,
        `/api/v1/runs/${ids.run}/files`,
        `/api/v1/runs/${ids.run}/files/${ids.tap}/x.pcap`,
        `/api/v1/configs/${ids.config}`,
        `/api/v1/devices`,
        `/api/v1/devices/${ids.collector}`,
        `/api/v1/devices/${ids.tap}/snapshots?since=0`,
      ];
      const out = [];
      for (const p of paths) {
        const r = await fetch(p);
        out.push({ path: p, status: r.status, text: await r.text() });
      }
      return out;
    }, { ids, A });
    for (const r of direct) {
      const shared = /\/devices/.test(r.path);
      if (shared) assert.equal(r.status, 200, r.path);
      else assert.ok([400, 404].includes(r.status), `${r.path}: ${r.status}`);
      // Bob's own requests name what he typed; nothing else of alice's.
      const typed = markers.filter((m) => r.path.includes(m));
      assert.deepEqual(leaks(r.text).filter((m) => !typed.includes(m)), [], `${r.path}: ${r.text.slice(0, 400)}`);
    }
    await page.goto(`${manager.url}/api/v1/runs/${ids.run}/files/${ids.tap}/${ids.session}.pcap`);
    assert.match(await page.textContent("body"), /not_found/);

    await Promise.all(pending);
    assert.ok(seen.length > 20, `the page's responses were seen (${seen.length})`);
    for (const r of seen) {
      const typed = markers.filter((m) => decodeURIComponent(r.url).includes(m));
      const found = leaks(r.text).filter((m) => !typed.includes(m));
      assert.deepEqual(found, [], `a response the page received: ${r.text.slice(0, 600)}`);
    }
    await ctx.close();
  });
});
