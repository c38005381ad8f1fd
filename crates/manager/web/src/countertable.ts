// The run page's per-device counter tables: capture daemons' session
// counters, and in-line agents' program counters (spec/inline-control.md,
// `counters` of the status: source matched/instrumented/skipped_*, sink
// marked/records/ring_drops/…) with what the agent did with them (records
// read from the ring, rows the client library refused). One table per
// kind, since the two count different things.

import { h, fmtBytes, fmtNum } from "./dom";
import { stateBadge } from "./runctl";
import type { Device, Run } from "./types";

export interface DeviceStatus {
  device: number;
  session?: string;
  state?: string;
  reason?: string | null;
  counters?: Record<string, number> | null;
}

type Counters = Record<string, number>;

interface Column {
  key: string;
  label: string;
  title?: string;
  value(c: Counters): number | undefined;
  bytes?: boolean;
}

const plain = (key: string, label = key.replace(/_/g, " "), title?: string): Column => ({
  key, label, title, value: (c) => (typeof c[key] === "number" ? c[key] : undefined),
});

const CAPTURE: Column[] = [
  plain("seen"), plain("matched"), plain("stored"), { ...plain("bytes"), bytes: true }, { ...plain("written"), bytes: true },
  plain("sampled_out"), plain("dropped_kernel"), plain("dropped_by_us"), plain("flows_exported"),
];

/** Every `skipped_*` counter of a source, summed (the cell's title itemises them). */
const skipped: Column = {
  key: "skipped",
  label: "skipped",
  title: "packets not instrumented: sampling, rate limit, MTU, extension headers, fragments, jumbograms, UDP GSO",
  value: (c) => {
    const ks = Object.keys(c).filter((k) => k.startsWith("skipped_"));
    return ks.length ? ks.reduce((s, k) => s + (c[k] ?? 0), 0) : undefined;
  },
};

const INLINE: Column[] = [
  plain("matched", "matched", "packets of the configured flows"),
  plain("instrumented", "instrumented", "packets the source measured (option inserted)"),
  skipped,
  plain("insert_errors", "insert errors"),
  plain("marked", "marked", "measured packets the sink saw"),
  plain("records"),
  plain("ring_drops", "ring drops", "records lost in the sink's ring buffer"),
  plain("foreign", "foreign", "options from unknown sources"),
  plain("remove_errors", "remove errors"),
  plain("records_read", "records read", "records the agent read from the ring buffer"),
  plain("dropped_by_us", "rows refused", "rows the client library refused"),
];

export interface CounterRow {
  status: DeviceStatus;
  device: Device | undefined;
}

function cell(col: Column, c: Counters): HTMLTableCellElement {
  const v = col.value(c);
  const text = v === undefined ? "—" : col.bytes ? fmtBytes(v) : fmtNum(v);
  const title = col.key === "skipped" ? Object.entries(c).filter(([k]) => k.startsWith("skipped_")).map(([k, n]) => `${k} ${n}`).join(", ") : undefined;
  return h("td", { class: "num", "data-counter": col.key, title }, text);
}

/** One table of `rows` with the columns of their kind (in-line: those any agent reports). */
export function counterTable(rows: CounterRow[], run: Run, inline: boolean, deviceName: (d: number) => string): HTMLTableElement {
  const counters = (r: CounterRow): Counters => r.status.counters ?? {};
  const cols = inline ? INLINE.filter((col) => rows.some((r) => col.value(counters(r)) !== undefined)) : CAPTURE;
  const shown = inline && cols.length === 0 ? [INLINE[1]!, INLINE[5]!] : cols;
  return h("table", { class: "data counters", "data-kind": inline ? "inline" : "capture" },
    h("thead", null, h("tr", null,
      h("th", null, inline ? "In-line agent" : "Device"), h("th", null, inline ? "Role" : "Session"), h("th", null, "State"),
      shown.map((col) => h("th", { title: col.title }, col.label)))),
    h("tbody", null, rows.map((r) => {
      const d = r.status;
      const rd = run.devices.find((x) => x.device === d.device);
      const reason = d.reason ?? rd?.reason;
      const second = inline
        ? ((r.device?.capabilities as { roles?: string[] } | null)?.roles ?? []).join(", ") || "agent"
        : h("code", null, d.session ?? rd?.session ?? "");
      return h("tr", { "data-device": d.device },
        h("td", null, deviceName(d.device)),
        h("td", null, second),
        h("td", null, stateBadge(d.state ?? rd?.state ?? "unknown"), reason ? h("div", { class: "reason" }, String(reason)) : null),
        shown.map((col) => cell(col, counters(r))),
      );
    })));
}
