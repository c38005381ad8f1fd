// The rows a live plot holds, sorted by time: x (Unix s), sender, one
// value per field, and break rows (every value null) that end a sender's
// lines at a gap; and how they become uPlot's columns, one per field and
// sender. Gaps come from the query API (`gaps`, for fetched rows) or, for
// tail rows, from a silence longer than GAP_FACTOR typical periods of the
// sender. In rate mode the tail's raw values become rates here.

import { widenGaps } from "./plotgaps";

/** A silence longer than this many typical periods breaks a line. */
export const GAP_FACTOR = 3;

/** The rows answer of the query API (JSON), as far as plots read it. */
export interface RowsAnswer {
  start_time: number;
  fields: { name: string; type: string }[];
  rows: (number | string | boolean | null)[][];
  gaps?: { sender: number; from: number; to: number }[];
}

/** uPlot's columns of the rows and what each series is. */
export interface Columns {
  /** `field` with one sender, `field @sender` with several. */
  keys: string[];
  fields: string[];
  /** The sender of each series (-1: the only one). */
  senders: number[];
  /** undefined: no row of this series at that time (spanned); null: a gap. */
  cols: (number | null | undefined)[][];
}

export class PlotRows {
  xs: number[] = [];
  senders: number[] = [];
  private brk: boolean[] = [];
  private vals: (number | null)[][] = [];
  /** Per sender: last time seen and typical period (for tail gaps). */
  private lastX = new Map<number, number>();
  private period = new Map<number, number>();
  /** Rate mode: last raw value per sender and field, for tail rows. */
  private prevRaw = new Map<string, [number, number]>();

  constructor(private readonly fields: string[]) {
    this.vals = fields.map(() => []);
  }

  /** Rows drawn (break rows are not points). */
  points(): number {
    return this.xs.length - this.brk.filter(Boolean).length;
  }

  /**
   * Takes a rows answer (with its gaps) as the rows held; answers the
   * highest row id and the newest time. `whole`: the whole stream (its
   * periods are learnt for the tail), not a zoomed range.
   */
  load(ans: RowsAnswer, whole: boolean): { maxId: number; newest: number } {
    const start = ans.start_time;
    const idx = (n: string): number => ans.fields.findIndex((f) => f.name === n);
    const iId = idx("oml_tuple_id");
    const iS = idx("oml_sender_id");
    const iT = idx("oml_ts_server");
    const iF = this.fields.map(idx);
    const rows: { x: number; s: number; v: (number | null)[]; b?: boolean }[] = [];
    let maxId = 0;
    for (const r of ans.rows) {
      if (typeof r[iT] !== "number") continue;
      rows.push({ x: start + (r[iT] as number), s: Number(r[iS] ?? 0), v: iF.map((c) => toNum(r[c])) });
      maxId = Math.max(maxId, Number(r[iId] ?? 0));
    }
    // Gap bounds: seconds after the start like the rows, or Unix seconds.
    const at = (t: number): number => (t > 1e8 ? t : start + t);
    for (const g of ans.gaps ?? []) {
      rows.push({ x: (at(g.from) + at(g.to)) / 2, s: Number(g.sender), v: this.fields.map(() => null), b: true });
    }
    rows.sort((a, b) => a.x - b.x);
    this.xs = rows.map((r) => r.x);
    this.senders = rows.map((r) => r.s);
    this.brk = rows.map((r) => r.b === true);
    this.vals = this.fields.map((_, k) => rows.map((r) => r.v[k] ?? null));
    if (whole) this.periods(rows.filter((r) => !r.b));
    return { maxId, newest: rows.length ? rows[rows.length - 1]!.x : 0 };
  }

  /** Each sender's typical period (median interval) and last time. */
  private periods(rows: { x: number; s: number }[]): void {
    const by = new Map<number, number[]>();
    for (const r of rows) {
      const l = by.get(r.s) ?? [];
      l.push(r.x);
      by.set(r.s, l);
    }
    for (const [s, xs] of by) {
      this.lastX.set(s, xs[xs.length - 1]!);
      const d = xs.slice(1).map((x, i) => x - xs[i]!).filter((v) => v > 0).sort((a, b) => a - b);
      if (d.length >= 3) this.period.set(s, d[Math.floor(d.length / 2)]!);
    }
  }

  private insert(x: number, s: number, v: (number | null)[], isBreak = false): void {
    let i = this.xs.length;
    while (i > 0 && this.xs[i - 1]! > x) i--;
    this.xs.splice(i, 0, x);
    this.senders.splice(i, 0, s);
    this.brk.splice(i, 0, isBreak);
    v.forEach((val, k) => this.vals[k]!.splice(i, 0, val));
  }

  /**
   * Values of a tail row as drawn: raw, or in rate mode the rate against
   * the sender's previous row (null: the first row of a sender, which
   * only sets that base; a counter that went down, restarted, gives no
   * rate either).
   */
  tailValues(x: number, s: number, row: Record<string, unknown>, rate: boolean): (number | null)[] | null {
    const raw = this.fields.map((f) => toNum(row[f]));
    if (!rate) return raw;
    const had = this.fields.map((f) => this.prevRaw.get(`${s}|${f}`));
    this.fields.forEach((f, k) => raw[k] !== null && this.prevRaw.set(`${s}|${f}`, [x, raw[k]!]));
    if (had.every((p) => p === undefined)) return null;
    return raw.map((r, k) => {
      const p = had[k];
      if (r === null || !p || x <= p[0] || r < p[1]) return null;
      return (r - p[1]) / (x - p[0]);
    });
  }

  /** Adds a tail row, after a break row when the sender was silent too long. */
  addTail(x: number, s: number, v: (number | null)[]): void {
    const last = this.lastX.get(s);
    const per = this.period.get(s);
    if (last !== undefined && per !== undefined && x - last > GAP_FACTOR * per) {
      this.insert((x + last) / 2, s, this.fields.map(() => null), true);
    }
    this.lastX.set(s, Math.max(last ?? x, x));
    this.insert(x, s, v);
  }

  /** uPlot's columns: one per field, or per field and sender when there are several. */
  columns(): Columns {
    const n = this.xs.length;
    const fields = this.fields;
    const distinct = [...new Set(this.senders)].sort((a, b) => a - b);
    const multi = distinct.length > 1;
    const keys = multi ? fields.flatMap((f) => distinct.map((s) => `${f} @${s}`)) : fields.slice();
    const pos = new Map(distinct.map((s, i) => [s, i]));
    const cols: (number | null | undefined)[][] = keys.map(() => new Array<number | null | undefined>(n).fill(multi ? undefined : null));
    for (let r = 0; r < n; r++) {
      const sp = multi ? pos.get(this.senders[r]!)! : 0;
      for (let k = 0; k < fields.length; k++) {
        cols[multi ? k * distinct.length + sp : k]![r] = this.vals[k]![r] ?? null;
      }
    }
    if (multi) for (const c of cols) widenGaps(c);
    return {
      keys,
      fields: multi ? fields.flatMap((f) => distinct.map(() => f)) : fields.slice(),
      senders: multi ? fields.flatMap(() => distinct) : fields.map(() => -1),
      cols,
    };
  }
}

export function toNum(v: unknown): number | null {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return null;
}
