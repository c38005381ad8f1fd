// Real components for the browser tests: the release `streamgauge` binary
// (STREAMGAUGE_BIN) as collection server, capture daemon and manager, a
// pair of network namespaces joined by a veth pair (capture inside one,
// traffic from the other), headless Debian chromium through
// playwright-core, and a small API client for setup.
//
// A missing tool skips a test locally and FAILS it when CI is set.

import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
export const BIN = process.env.STREAMGAUGE_BIN || join(ROOT, "target", "release", "streamgauge");
export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
/**
 * Where screenshots go: docs/manager (committed, shown by docs/manager.md)
 * only when SCREENSHOTS=update is set, so that a test run never rewrites
 * tracked files; otherwise test-results/screenshots (ignored), where a
 * failing run's pictures can still be looked at.
 */
export const SHOTS =
  process.env.SCREENSHOTS === "update"
    ? join(ROOT, "docs", "manager")
    : join(ROOT, "crates", "manager", "web", "test-results", "screenshots");

/** Why the tests cannot run here, or null. In CI a missing tool is a failure. */
export function missing() {
  const why = [];
  if (!existsSync(BIN)) why.push(`streamgauge binary not found at ${BIN} (set STREAMGAUGE_BIN or build with cargo build --release)`);
  if (!existsSync(CHROMIUM)) why.push(`chromium not found at ${CHROMIUM} (apt-get install chromium; scripts/setup.sh does)`);
  for (const tool of ["ip", "ping"]) {
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      why.push(`${tool} not found (iproute2, iputils-ping)`);
    }
  }
  if (process.getuid && process.getuid() !== 0) why.push("network namespaces need root");
  if (why.length === 0) return null;
  if (process.env.CI) throw new Error(`browser tests cannot run (CI is set, so this fails): ${why.join("; ")}`);
  return why.join("; ");
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `f` until it returns a truthy value; throws with `what` after `ms`. */
export async function until(what, f, ms = 20000, every = 100) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      const v = await f();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(every);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${last.message})` : ""}`);
}

/** A child process whose output is kept (shown when a test fails). */
export class Proc {
  constructor(name, args, opts = {}) {
    this.name = name;
    this.out = "";
    this.child = spawn(opts.bin ?? BIN, args, { env: { ...process.env, ...(opts.env ?? {}) }, stdio: ["pipe", "pipe", "pipe"] });
    const keep = (d) => {
      this.out += d.toString();
      if (this.out.length > 200_000) this.out = this.out.slice(-100_000);
    };
    this.child.stdout.on("data", keep);
    this.child.stderr.on("data", keep);
    this.exited = new Promise((r) => this.child.on("exit", (code, sig) => r({ code, sig })));
  }
  alive() {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async waitFor(re, ms = 20000) {
    return until(`${this.name} to print ${re}`, () => {
      if (!this.alive()) throw new Error(`${this.name} exited: ${this.out.slice(-2000)}`);
      return re.exec(this.out);
    }, ms);
  }
  async stop() {
    if (!this.alive()) return;
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(t);
  }
}

async function waitHttp(url, proc, ms = 20000) {
  await until(`${url} to answer`, async () => {
    if (proc && !proc.alive()) throw new Error(`${proc.name} exited: ${proc.out.slice(-2000)}`);
    const r = await fetch(url).catch(() => null);
    return r !== null;
  }, ms);
}

/** The collection server with its query API. */
export async function startServer(dir) {
  const port = await freePort();
  const http = await freePort();
  mkdirSync(join(dir, "server"), { recursive: true });
  const p = new Proc("server", ["server", "--bind", "127.0.0.1", "-l", String(port), "-D", join(dir, "server"), "--http", `127.0.0.1:${http}`]);
  await waitHttp(`http://127.0.0.1:${http}/api/v1/domains`, p);
  return { proc: p, port, http };
}

/** Deletes the named network namespaces (those that exist). */
function removeNetns(names) {
  for (const n of names) {
    try {
      execFileSync("ip", ["netns", "del", n], { stdio: "ignore" });
    } catch {
      // not there
    }
  }
}

/** Two namespaces joined by a veth pair: `cap` (10.77.0.1, captured) and `gen` (10.77.0.2). */
export function makeNetns(tag) {
  const cap = `sgw-cap-${tag}`;
  const gen = `sgw-gen-${tag}`;
  const sh = (...a) => execFileSync("ip", a, { stdio: ["ignore", "ignore", "pipe"] });
  const cleanup = () => removeNetns([cap, gen]);
  cleanup();
  try {
    sh("netns", "add", cap);
    sh("netns", "add", gen);
    sh("-n", cap, "link", "add", "sgw0", "type", "veth", "peer", "name", "sgw1", "netns", gen);
    sh("-n", cap, "addr", "add", "10.77.0.1/24", "dev", "sgw0");
    sh("-n", gen, "addr", "add", "10.77.0.2/24", "dev", "sgw1");
    sh("-n", cap, "link", "set", "sgw0", "up");
    sh("-n", gen, "link", "set", "sgw1", "up");
    sh("-n", cap, "link", "set", "lo", "up");
    sh("-n", gen, "link", "set", "lo", "up");
  } catch (e) {
    cleanup();
    throw new Error(`creating the test namespaces: ${e.stderr?.toString() ?? e.message}`);
  }
  return { cap, gen, iface: "sgw0", peer: "10.77.0.1", cleanup };
}

/** Traffic from `gen` to `cap`: ping every 20 ms until stopped. */
export function traffic(ns) {
  const p = new Proc("ping", ["netns", "exec", ns.gen, "ping", "-i", "0.02", "-s", "200", ns.peer], { bin: "ip" });
  return p;
}

/** The manager's credential for the capture daemon and in-line agents
 * (its line in the manager's credentials file). */
export const DEVICE_CREDENTIAL = "op";
/** Its token (in the daemon's and agents' token file). */
export const DEVICE_TOKEN = "browser-test-control-token";

/** The token file the daemon and agents are given (they never run without
 * one), owner-only, in its own temporary directory. */
let controlDir = null;
function controlTokens() {
  if (controlDir === null) {
    controlDir = mkdtempSync(join(tmpdir(), "sg-control-"));
    writeFileSync(join(controlDir, "control.tokens"), `* ${DEVICE_TOKEN} read,control\n`, { mode: 0o600 });
  }
  return join(controlDir, "control.tokens");
}

/** The capture daemon, its packet sockets in `ns.cap`, its API on loopback
 * (plain HTTP, allowed on loopback only). */
export async function startCapture(dir, ns, collectPort) {
  const api = await freePort();
  const data = join(dir, "capture");
  mkdirSync(data, { recursive: true });
  const cfg = join(dir, "capture.toml");
  writeFileSync(cfg, [
    `interfaces = ["${ns.iface}"]`,
    `data_dir = "${data}"`,
    `listen = "127.0.0.1:${api}"`,
    "plain_http = true",
    `token_file = "${controlTokens()}"`,
    `collect = "127.0.0.1:${collectPort}"`,
    `netns = "${ns.cap}"`,
    "",
    "[policy]",
    "max_snaplen = 4096",
    "",
  ].join("\n"));
  const p = new Proc("capture", ["capture", "--config", cfg]);
  await waitHttp(`http://127.0.0.1:${api}/api/v1/capabilities`, p);
  return { proc: p, api };
}

export const ADMIN_PASSWORD = "admin-pass-for-tests-1";

/** The manager on a free port. */
export async function startManager(dir) {
  const data = join(dir, "manager");
  mkdirSync(data, { recursive: true });
  const creds = join(dir, "credentials");
  // Owner-only: components refuse secret files others may read.
  writeFileSync(creds, `${DEVICE_CREDENTIAL} ${DEVICE_TOKEN}\n`, { mode: 0o600 });
  const port = await freePort();
  const p = new Proc("manager", ["manager", "--listen", `127.0.0.1:${port}`, "--data-dir", data, "--credentials", creds, "--monitor-interval", "2s"], {
    env: { STREAMGAUGE_ADMIN_PASSWORD: ADMIN_PASSWORD },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/api/v1/session`, p);
  return { proc: p, url };
}

/** A logged-in API client (cookie + CSRF token), for setup and checks. */
export class Api {
  constructor(base) {
    this.base = base;
    this.cookie = "";
    this.csrf = "";
  }
  static async login(base, username, password) {
    const a = new Api(base);
    const s = await a.call("POST", "/login", { username, password });
    a.csrf = s.csrf_token;
    return a;
  }
  async call(method, path, body, { csrf = true } = {}) {
    const headers = { Accept: "application/json" };
    if (this.cookie) headers.Cookie = this.cookie;
    if (method !== "GET") {
      headers["Content-Type"] = "application/json";
      if (csrf && this.csrf) headers["X-CSRF-Token"] = this.csrf;
    }
    const r = await fetch(`${this.base}/api/v1${path}`, { method, headers, body: method === "GET" ? undefined : JSON.stringify(body ?? {}) });
    const set = r.headers.get("set-cookie");
    if (set) this.cookie = set.split(";")[0];
    const text = await r.text();
    const json = text ? JSON.parse(text) : undefined;
    if (!r.ok) {
      const e = new Error(`${method} ${path}: ${r.status} ${text}`);
      e.status = r.status;
      e.body = json;
      throw e;
    }
    return json;
  }
}

export function tempDir(tag) {
  return mkdtempSync(join(tmpdir(), `sg-web-${tag}-`));
}

export function removeDir(d) {
  rmSync(d, { recursive: true, force: true });
}

export async function launchBrowser() {
  const { chromium } = await import("playwright-core");
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/** Saves a screenshot (for docs/manager.md with SCREENSHOTS=update). */
export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** First bytes of a packet file: pcap (either byte order, µs or ns) or pcapng. */
export function packetFileKind(buf) {
  const m = buf.readUInt32LE(0);
  if (m === 0x0a0d0d0a) return "pcapng";
  if ([0xa1b2c3d4, 0xa1b23c4d, 0xd4c3b2a1, 0x4d3cb2a1].includes(m)) return "pcap";
  return null;
}

export { readFileSync };

/**
 * Two namespaces joined by a veth pair for the in-line agents, over IPv6:
 * `a` (fd00:78::1 on `va`, where the source instruments) and `b`
 * (fd00:78::2 on `vb`, where the sink records). Addresses are usable at
 * once (no duplicate address detection).
 */
export function makeNetns6(tag) {
  const a = `sgw-ina-${tag}`;
  const b = `sgw-inb-${tag}`;
  const sh = (...args) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
  const cleanup = () => removeNetns([a, b]);
  cleanup();
  try {
    for (const n of [a, b]) {
      sh("netns", "add", n);
      sh("netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0");
      sh("-n", n, "link", "set", "lo", "up");
    }
    sh("-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b);
    sh("-n", a, "addr", "add", "fd00:78::1/64", "dev", "va", "nodad");
    sh("-n", b, "addr", "add", "fd00:78::2/64", "dev", "vb", "nodad");
    sh("-n", a, "link", "set", "va", "up");
    sh("-n", b, "link", "set", "vb", "up");
  } catch (e) {
    cleanup();
    throw new Error(`creating the in-line test namespaces: ${e.stderr?.toString() ?? e.message}`);
  }
  return { a, b, peer: "fd00:78::2", cleanup };
}

/** `streamgauge inline ROLE` on `dev` in namespace `ns`, its control API on loopback (plain HTTP). */
export async function startInline(role, ns, dev, extra) {
  const api = await freePort();
  const tokens = controlTokens();
  const p = new Proc(`inline ${role}`, ["inline", role, "--dev", dev, "--netns", ns, "--control", `127.0.0.1:${api}`,
    "--control-token-file", tokens, "--control-plain-http", "--control-state-dir", controlDir, ...extra]);
  await waitHttp(`http://127.0.0.1:${api}/api/v1/status`, p);
  return { proc: p, api };
}
