// A live time-series plot of one measurement stream (uPlot).
//
// Loads the stream downsampled by the query API (`rows?points=N`, M4 done
// in the database), then follows it with the SSE tail from the last row id
// it holds, so no row is missed or drawn twice. Drag to zoom: the selected
// range is fetched again, downsampled for the plot's width (`from`/`to`);
// the arrows pan, "Live" returns to the whole stream and follows it.
// One series per field and sender. CSV/Parquet links export the visible
// range. Values are written with SI prefixes (sifmt.ts). The drawn state
// is mirrored in data-* attributes of the plot element (points, last row
// id and its values, y tick labels, time of the last draw) so people and
// tests can see what is plotted.

import uPlot from "uplot";
import { API, ApiError } from "./api";
import { h, replace } from "./dom";
import { siFormat, siTicks } from "./sifmt";
import type { StreamInfo } from "./types";

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
/** Tail rows kept before the whole stream is fetched again downsampled. */
const REFETCH_FACTOR = 8;

interface RowsAnswer {
  start_time: number;
  fields: { name: string; type: string }[];
  rows: (number | string | boolean | null)[][];
}

export interface PlotSpec {
  stream: string;
  fields: string[];
}

export class LivePlot {
  readonly el: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly status: HTMLElement;
  private readonly csv: HTMLAnchorElement;
  private readonly parquet: HTMLAnchorElement;
  private readonly liveBtn: HTMLButtonElement;
  private u: uPlot | null = null;
  private es: EventSource | null = null;
  private startTime = 0;
  // Rows held, sorted by time: x (Unix s), sender, values per field.
  private xs: number[] = [];
  private senders: number[] = [];
  private vals: (number | null)[][] = [];
  private maxId = 0;
  private lastRowId = 0;
  private tailSinceFetch = 0;
  private seriesKeys: string[] = [];
  private live = true;
  private range: [number, number] | null = null;
  private fetching = false;
  private pendingTail: Record<string, unknown>[] = [];
  private dirty = false;
  private closed = false;
  private error = "";

  constructor(
    private readonly expId: number,
    readonly spec: PlotSpec,
    private readonly info: StreamInfo | undefined,
    onRemove: (p: LivePlot) => void,
  ) {
    this.chartBox = h("div", { class: "chart" });
    this.status = h("div", { class: "plot-status" }, "loading…");
    this.csv = h("a", { class: "button small", download: `${spec.stream}.csv`, "data-format": "csv" }, "CSV");
    this.parquet = h("a", { class: "button small", download: `${spec.stream}.parquet`, "data-format": "parquet" }, "Parquet");
    this.liveBtn = h("button", { type: "button", class: "small live-toggle", onclick: () => this.goLive() }, "Live");
    this.el = h(
      "div",
      { class: "plot", "data-stream": spec.stream, "data-fields": spec.fields.join(","), "data-points": "0", "data-live": "true" },
      h(
        "div",
        { class: "plot-head" },
        h("strong", null, spec.stream),
        " ",
        h("span", { class: "muted" }, spec.fields.map((f) => f + this.unit(f)).join(", ")),
        h("span", { class: "spacer" }),
        h("button", { type: "button", class: "small", title: "pan left", onclick: () => this.pan(-0.5) }, "←"),
        h("button", { type: "button", class: "small", title: "pan right", onclick: () => this.pan(0.5) }, "→"),
        h("button", { type: "button", class: "small", title: "zoom out", onclick: () => this.zoomOut() }, "−"),
        this.liveBtn,
        this.csv,
        this.parquet,
        h("button", { type: "button", class: "small link", title: "remove this plot", onclick: () => { this.close(); onRemove(this); } }, "×"),
      ),
      this.chartBox,
      this.status,
    );
  }

  private unit(field: string): string {
    const u = this.info?.fields.find((f) => f.name === field)?.unit;
    return u ? ` (${u})` : "";
  }

  /** The y axis' tick labels, mirrored in data-y-ticks (they are drawn on the canvas). */
  private yTicks(splits: number[], incr: number): string[] {
    const labels = siTicks(splits, incr, this.axisUnit());
    this.el.dataset.yTicks = JSON.stringify(labels);
    return labels;
  }

  /** The unit of the y axis: the fields' one when they share it, else none. */
  private axisUnit(): string {
    const units = new Set(this.spec.fields.map((f) => this.info?.fields.find((x) => x.name === f)?.unit ?? ""));
    return units.size === 1 ? [...units][0]! : "";
  }

  private base(): string {
    return `${API}/experiments/${this.expId}/query/streams/${encodeURIComponent(this.spec.stream)}`;
  }

  private columns(): string {
    return ["oml_tuple_id", "oml_sender_id", "oml_ts_server", ...this.spec.fields].join(",");
  }

  /** Starts loading; call once the element is in the document. */
  async start(): Promise<void> {
    this.makeChart();
    await this.fetch(null);
    if (!this.closed) this.follow();
  }

  private width(): number {
    return Math.max(300, Math.floor(this.chartBox.clientWidth || this.el.clientWidth || 800));
  }

  private makeChart(): void {
    const series: uPlot.Series[] = [{ label: "time" }];
    this.u = new uPlot(
      {
        width: this.width(),
        height: 220,
        series,
        scales: { x: { time: true } },
        axes: [{}, { size: 64, values: (_u, splits, _i, _space, incr) => this.yTicks(splits, incr) }],
        cursor: { drag: { x: true, y: false, setScale: false }, bind: { dblclick: () => () => { this.goLive(); return null; } } },
        legend: { live: true },
        hooks: {
          setSelect: [(u) => this.onSelect(u)],
          draw: [(u) => this.onDraw(u)],
        },
      },
      [[]],
      this.chartBox,
    );
  }

  /** Fetches the whole stream (`null`) or a range [from, to] in Unix s. */
  private async fetch(range: [number, number] | null): Promise<void> {
    this.fetching = true;
    const q = new URLSearchParams({ fields: this.columns(), points: String(Math.max(64, this.width())) });
    if (range && this.startTime) {
      q.set("from", String(range[0] - this.startTime));
      q.set("to", String(range[1] - this.startTime));
    }
    try {
      const resp = await fetch(`${this.base()}/rows?${q}`, { credentials: "same-origin" });
      if (!resp.ok) {
        let message = `${resp.status} ${resp.statusText}`;
        try {
          const b = (await resp.json()) as { error?: { message?: string; code?: string } };
          if (b.error?.message) message = b.error.message;
        } catch {
          // keep the status line
        }
        throw new ApiError(resp.status, "query", message, undefined);
      }
      const ans = (await resp.json()) as RowsAnswer;
      if (this.closed) return;
      this.startTime = ans.start_time;
      const idx = (n: string): number => ans.fields.findIndex((f) => f.name === n);
      const iId = idx("oml_tuple_id");
      const iS = idx("oml_sender_id");
      const iT = idx("oml_ts_server");
      const iF = this.spec.fields.map(idx);
      const rows = ans.rows
        .filter((r) => typeof r[iT] === "number")
        .sort((a, b) => (a[iT] as number) - (b[iT] as number));
      this.xs = [];
      this.senders = [];
      this.vals = this.spec.fields.map(() => []);
      let max = 0;
      for (const r of rows) {
        this.xs.push(this.startTime + (r[iT] as number));
        this.senders.push(Number(r[iS] ?? 0));
        iF.forEach((c, k) => this.vals[k]!.push(toNum(r[c])));
        max = Math.max(max, Number(r[iId] ?? 0));
      }
      if (!range) {
        this.maxId = Math.max(this.maxId, max);
        this.tailSinceFetch = 0;
        const pending = this.pendingTail;
        this.pendingTail = [];
        for (const row of pending) this.addRow(row);
      }
      this.error = "";
      this.redraw(range);
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
      this.showStatus();
    } finally {
      this.fetching = false;
    }
  }

  private follow(): void {
    // Batched events: one per batch of rows the server read (a JSON array
    // per row on its own line, named by the opening `fields` event), so a
    // fast stream costs one event dispatch per batch, not per row.
    const q = new URLSearchParams({ fields: this.columns(), after: String(this.maxId), batch: "true" });
    const es = new EventSource(`${this.base()}/tail?${q}`);
    this.es = es;
    let names: string[] = [];
    es.addEventListener("fields", (ev) => {
      names = JSON.parse((ev as MessageEvent<string>).data) as string[];
    });
    es.addEventListener("rows", (ev) => {
      for (const line of (ev as MessageEvent<string>).data.split("\n")) {
        const values = JSON.parse(line) as unknown[];
        const row: Record<string, unknown> = {};
        names.forEach((n, i) => (row[n] = values[i]));
        if (this.fetching) this.pendingTail.push(row);
        else this.addRow(row);
      }
    });
    es.addEventListener("lagged", () => {
      // Too far behind: fetch the whole stream again and follow from there.
      es.close();
      void this.fetch(null).then(() => !this.closed && this.follow());
    });
    es.addEventListener("error", () => {
      if (es.readyState === EventSource.CLOSED) {
        this.error = "live updates stopped (the stream could not be followed); press Live to retry";
        this.showStatus();
      }
    });
  }

  private addRow(row: Record<string, unknown>): void {
    const id = Number(row["oml_tuple_id"] ?? 0);
    if (id && id <= this.maxId) return;
    this.maxId = Math.max(this.maxId, id);
    this.lastRowId = id;
    const t = row["oml_ts_server"];
    if (typeof t !== "number" || !this.live) {
      this.showStatus();
      return;
    }
    const x = this.startTime + t;
    let i = this.xs.length;
    while (i > 0 && this.xs[i - 1]! > x) i--;
    this.xs.splice(i, 0, x);
    this.senders.splice(i, 0, Number(row["oml_sender_id"] ?? 0));
    this.spec.fields.forEach((f, k) => this.vals[k]!.splice(i, 0, toNum(row[f])));
    this.tailSinceFetch++;
    if (this.tailSinceFetch > REFETCH_FACTOR * this.width()) {
      void this.fetch(null);
      return;
    }
    this.scheduleRedraw();
  }

  private scheduleRedraw(): void {
    if (this.dirty) return;
    this.dirty = true;
    requestAnimationFrame(() => {
      this.dirty = false;
      if (!this.closed) this.redraw(this.live ? null : this.range);
    });
  }

  private redraw(range: [number, number] | null): void {
    const u = this.u;
    if (!u) return;
    const n = this.xs.length;
    const fields = this.spec.fields;
    const distinct = [...new Set(this.senders)].sort((a, b) => a - b);
    const multi = distinct.length > 1;
    const keys = multi ? fields.flatMap((f) => distinct.map((s) => `${f} @${s}`)) : fields.slice();
    if (keys.join("\n") !== this.seriesKeys.join("\n")) {
      while (u.series.length > 1) u.delSeries(1);
      this.seriesKeys = keys;
      keys.forEach((key, i) =>
        u.addSeries({ label: key, value: (_u, v) => (v === null || v === undefined ? "—" : siFormat(v, this.axisUnit())), stroke: PALETTE[i % PALETTE.length]!, width: 1.5, spanGaps: true, points: { show: false } }, i + 1),
      );
    }
    const pos = new Map(distinct.map((s, i) => [s, i]));
    const cols: (number | null)[][] = keys.map(() => new Array<number | null>(n).fill(null));
    for (let r = 0; r < n; r++) {
      const sp = multi ? pos.get(this.senders[r]!)! : 0;
      for (let k = 0; k < fields.length; k++) {
        cols[multi ? k * distinct.length + sp : k]![r] = this.vals[k]![r] ?? null;
      }
    }
    const data = [this.xs.slice(), ...cols] as uPlot.AlignedData;
    if (range) {
      u.batch(() => {
        u.setData(data, false);
        u.setScale("x", { min: range[0], max: range[1] });
      });
    } else {
      u.setData(data, true);
    }
  }

  private onSelect(u: uPlot): void {
    if (u.select.width < 2) return;
    const min = u.posToVal(u.select.left, "x");
    const max = u.posToVal(u.select.left + u.select.width, "x");
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    this.zoomTo([min, max]);
  }

  private zoomTo(r: [number, number]): void {
    this.live = false;
    this.range = r;
    this.el.dataset.live = "false";
    void this.fetch(r);
  }

  private visible(): [number, number] | null {
    const s = this.u?.scales["x"];
    if (!s || s.min === undefined || s.max === undefined || s.min === null || s.max === null) return null;
    return [s.min, s.max];
  }

  private pan(frac: number): void {
    const v = this.visible();
    if (!v) return;
    const d = (v[1] - v[0]) * frac;
    this.zoomTo([v[0] + d, v[1] + d]);
  }

  private zoomOut(): void {
    const v = this.visible();
    if (!v) return;
    const w = v[1] - v[0];
    this.zoomTo([v[0] - w / 2, v[1] + w / 2]);
  }

  /** Back to the whole stream, followed live. */
  goLive(): void {
    this.live = true;
    this.range = null;
    this.el.dataset.live = "true";
    this.es?.close();
    void this.fetch(null).then(() => !this.closed && this.follow());
  }

  private onDraw(u: uPlot): void {
    const n = u.data[0].length;
    const ds = this.el.dataset;
    ds.points = String(n);
    ds.lastId = String(this.lastRowId || this.maxId);
    ds.drawnAt = String(Date.now());
    const last: Record<string, number | null> = {};
    for (let s = 1; s < u.data.length; s++) {
      const col = u.data[s]!;
      let v: number | null | undefined = null;
      for (let i = col.length - 1; i >= 0; i--) {
        if (col[i] !== null && col[i] !== undefined) {
          v = col[i];
          break;
        }
      }
      last[this.seriesKeys[s - 1] ?? `s${s}`] = v ?? null;
    }
    ds.last = JSON.stringify(last);
    this.updateLinks();
    this.showStatus();
  }

  private updateLinks(): void {
    const q = new URLSearchParams({ fields: ["oml_sender_id", "oml_ts_server", ...this.spec.fields].join(",") });
    const v = this.visible();
    if (v && this.startTime && Number.isFinite(v[0]) && Number.isFinite(v[1])) {
      q.set("from", String(Math.max(0, v[0] - this.startTime)));
      q.set("to", String(v[1] - this.startTime));
    }
    q.set("format", "csv");
    this.csv.href = `${this.base()}/rows?${q}`;
    q.set("format", "parquet");
    this.parquet.href = `${this.base()}/rows?${q}`;
  }

  private showStatus(): void {
    const pts = this.u ? this.u.data[0].length : 0;
    const lastVals = this.el.dataset.last ? (JSON.parse(this.el.dataset.last) as Record<string, number | null>) : {};
    replace(
      this.status,
      this.error ? h("span", { class: "error" }, this.error, " · ") : null,
      h("span", { class: "points" }, `${pts} points`),
      Object.entries(lastVals).map(([k, v]) => [" · ", h("span", { class: "last", "data-series": k }, `${k} = ${v === null ? "—" : siFormat(v, this.axisUnit())}`)]),
      this.live ? (this.es && this.es.readyState !== EventSource.CLOSED ? " · live" : "") : " · zoomed (drag to zoom, Live to follow)",
    );
  }

  /** Resizes to the container's width. */
  resize(): void {
    this.u?.setSize({ width: this.width(), height: 220 });
  }

  close(): void {
    this.closed = true;
    this.es?.close();
    this.es = null;
    this.u?.destroy();
    this.u = null;
  }
}

function toNum(v: unknown): number | null {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return null;
}
