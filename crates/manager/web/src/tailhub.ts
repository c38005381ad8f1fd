// Live rows shared by the plots of a page. A browser opens at most six
// HTTP/1.1 connections to a host, and each Server-Sent Events tail holds
// one for as long as it is open: one tail per plot left no connection for
// the page's own requests with six plots (a reload hung) and two plots of
// eight without live rows. So there is one tail per stream of the page
// (`…/query/streams/{s}/tail`; the experiment fixes the domain and the
// collection server), asking the union of the fields its plots draw, and
// each batch of rows goes to every plot of the stream. At most MAX_TAILS
// tails are open at once, which leaves two connections for the page's
// fetches; further streams are polled (`rows?after=ID`) every POLL_MS.
//
// Nothing is lost or passed on twice: each subscriber keeps the highest
// row id it was given and only gets rows above it; a tail that must ask
// other fields (a plot came or went) is opened again from the lowest id
// its plots hold (`after=`, and the browser's `Last-Event-ID` when it
// reconnects by itself); a plot joining a tail that is already further
// gets the rows it lacks from the tail's recent rows, or the tail is
// opened again from that plot's id.

import { toNum } from "./plotrows";

/** Tails open at once; the other streams are polled. */
export const MAX_TAILS = 4;
/** How often a stream without a tail is polled (ms). */
export const POLL_MS = 2000;
/** Rows asked per poll; a stream further behind is polled again at once. */
const POLL_LIMIT = 10000;
/** Recent rows kept per tail, for plots joining it a little behind. */
const KEEP = 5000;
const BOOKKEEPING = ["oml_tuple_id", "oml_sender_id", "oml_ts_server"];

export type Row = Record<string, unknown>;
export type TailMode = "live" | "polling" | "idle";

/** What a plot hands to the hub. */
export interface TailClient {
  /** The fields drawn (besides the row id, sender and time). */
  readonly fields: string[];
  /** New rows, in row id order. */
  rows(rows: Row[]): void;
  /** The tail fell too far behind: fetch the stream again (then subscribe again). */
  lagged(): void;
  /** Why rows do not come (null: they come again). */
  error(message: string | null): void;
}

export interface TailSubscription {
  mode(): TailMode;
  close(): void;
}

interface Sub {
  client: TailClient;
  /** Highest row id given to this subscriber (or fetched by it). */
  after: number;
}

class Shared {
  readonly subs = new Set<Sub>();
  es: EventSource | null = null;
  /** The columns the open tail (or the polls) ask. */
  asked = "";
  /** Rows of the open tail kept for late joiners, and from which id they are complete. */
  recent: Row[] = [];
  completeAfter = 0;
  /** Highest row id received on the open tail. */
  lastId = 0;
  timer = 0;
  inFlight = false;

  constructor(readonly base: string) {}

  columns(): string {
    const names = new Set(BOOKKEEPING);
    for (const s of this.subs) for (const f of s.client.fields) names.add(f);
    return [...names].join(",");
  }

  lowest(): number {
    let m = Infinity;
    for (const s of this.subs) m = Math.min(m, s.after);
    return Number.isFinite(m) ? m : 0;
  }

  give(rows: Row[], only?: Sub): void {
    for (const s of only ? [only] : [...this.subs]) {
      const mine = rows.filter((r) => rowId(r) > s.after);
      if (!mine.length) continue;
      s.after = rowId(mine[mine.length - 1]!);
      s.client.rows(mine);
    }
  }
}

function rowId(r: Row): number {
  return toNum(r["oml_tuple_id"]) ?? 0;
}

/** Streams of the page, in the order they were first plotted. */
const streams = new Map<string, Shared>();
/** Set while the plots of a lagged tail let go of it: no tail is opened meanwhile. */
let hold = false;

/** Follows the stream at `base` (the query API's stream URL) for `client` from row id `after`. */
export function subscribe(base: string, after: number, client: TailClient): TailSubscription {
  let s = streams.get(base);
  if (!s) {
    s = new Shared(base);
    streams.set(base, s);
  }
  const sh = s;
  const sub: Sub = { client, after };
  sh.subs.add(sub);
  if (sh.es && sh.asked === sh.columns() && after < sh.lastId) {
    // Joining an open tail that is further: its recent rows, if they reach back far enough.
    if (after >= sh.completeAfter) sh.give(sh.recent, sub);
    else close(sh);
  }
  balance();
  return {
    mode: () => (sh.subs.has(sub) ? (sh.es ? "live" : sh.timer ? "polling" : "idle") : "idle"),
    close: () => {
      if (!sh.subs.delete(sub)) return;
      if (!sh.subs.size) {
        close(sh);
        streams.delete(base);
      }
      balance();
    },
  };
}

function close(s: Shared): void {
  s.es?.close();
  s.es = null;
  s.recent = [];
  window.clearInterval(s.timer);
  s.timer = 0;
}

/** The first MAX_TAILS streams get a tail (asking their plots' fields), the others are polled. */
function balance(): void {
  if (hold) return;
  let n = 0;
  for (const s of streams.values()) {
    if (n++ < MAX_TAILS) {
      if (s.timer) close(s);
      if (!s.es || s.asked !== s.columns()) open(s);
    } else {
      if (s.es) close(s);
      s.asked = s.columns();
      if (!s.timer) {
        s.timer = window.setInterval(() => void poll(s), POLL_MS);
        void poll(s);
      }
    }
  }
}

function open(s: Shared): void {
  close(s);
  s.asked = s.columns();
  s.lastId = s.completeAfter = s.lowest();
  // Batched events: one per batch of rows the server read (a JSON array
  // per row on its own line, named by the opening `fields` event).
  const q = new URLSearchParams({ fields: s.asked, after: String(s.lastId), batch: "true" });
  const es = new EventSource(`${s.base}/tail?${q}`);
  s.es = es;
  let names: string[] = [];
  es.addEventListener("fields", (ev) => {
    names = JSON.parse((ev as MessageEvent<string>).data) as string[];
  });
  es.addEventListener("rows", (ev) => {
    const rows: Row[] = [];
    for (const line of (ev as MessageEvent<string>).data.split("\n")) {
      const values = JSON.parse(line) as unknown[];
      const row: Row = {};
      names.forEach((n, i) => (row[n] = values[i]));
      rows.push(row);
    }
    if (s.es !== es || !rows.length) return;
    s.lastId = Math.max(s.lastId, rowId(rows[rows.length - 1]!));
    s.recent.push(...rows);
    if (s.recent.length > KEEP) {
      const dropped = s.recent.splice(0, s.recent.length - KEEP);
      s.completeAfter = rowId(dropped[dropped.length - 1]!);
    }
    for (const sub of s.subs) sub.client.error(null);
    s.give(rows);
  });
  es.addEventListener("lagged", () => {
    // Too far behind: every plot of the stream fetches it again and subscribes again.
    if (s.es !== es) return;
    close(s);
    hold = true;
    try {
      for (const sub of [...s.subs]) sub.client.lagged();
    } finally {
      hold = false;
    }
    balance();
  });
  es.addEventListener("error", () => {
    if (s.es === es && es.readyState === EventSource.CLOSED) {
      for (const sub of s.subs) sub.client.error("live updates stopped (the stream could not be followed); press Live to retry");
    }
  });
}

async function poll(s: Shared): Promise<void> {
  if (s.inFlight || !s.timer) return;
  s.inFlight = true;
  try {
    for (;;) {
      const q = new URLSearchParams({ fields: s.asked, after: String(s.lowest()), limit: String(POLL_LIMIT) });
      const resp = await fetch(`${s.base}/rows?${q}`, { credentials: "same-origin" });
      if (!resp.ok) throw new Error(`polling: ${resp.status} ${resp.statusText}`);
      const ans = (await resp.json()) as { fields: { name: string }[]; rows: unknown[][] };
      if (!s.timer) return;
      const rows = ans.rows.map((r) => Object.fromEntries(ans.fields.map((f, i) => [f.name, r[i]])) as Row);
      for (const sub of s.subs) sub.client.error(null);
      s.give(rows);
      if (rows.length < POLL_LIMIT) return;
    }
  } catch (e) {
    for (const sub of s.subs) sub.client.error(e instanceof Error ? e.message : String(e));
  } finally {
    s.inFlight = false;
  }
}
