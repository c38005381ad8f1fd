// A live time-series plot of one measurement stream (uPlot).
//
// Loads the stream downsampled by the query API (`rows?points=N`, M4 done
// in the database), then follows it with the SSE tail from the last row id
// it holds, so no row is missed or drawn twice; the plots of a stream
// share one tail (tailhub.ts). A first fetch that fails is tried again
// every RETRY_MS before the plot follows the stream. Drag to zoom: the selected
// range is fetched again, downsampled for the plot's width (`from`/`to`);
// the arrows pan, "Live" returns to the whole stream and follows it.
//
// One series per field and sender (the legend hides and shows them);
// fields whose unit differs from the first field's go on a second y axis.
// Counters (`kind: counter` in the stream description) are drawn as
// per-second rates (`derive=rate`), switchable to their raw values.
// Intervals without rows (the query API's `gaps`, and silences of the
// tail longer than three periods) break the lines (plotrows.ts).
// Times are written as everywhere on the page (timefmt.ts), values with
// SI prefixes and units (sifmt.ts). The run's events are drawn as
// vertical lines (plotmarks.ts). PNG, SVG and the plot's definition are
// exported from here (plotexport.ts). The drawn state is mirrored in
// data-* attributes of the plot element (points, last values, y tick
// labels, derive, marks drawn, time of the last draw) so people and tests
// can see what is plotted.

import uPlot from "uplot";
import { API, ApiError } from "./api";
import { h, replace } from "./dom";
import { siFormat, siTicks } from "./sifmt";
import { fmtInstant, onTimeChange, timeTicks } from "./timefmt";
import { drawMarks, type RunMark } from "./plotmarks";
import { GAP_FACTOR, PlotRows, type RowsAnswer } from "./plotrows";
import { POLL_MS, subscribe, type Row, type TailSubscription } from "./tailhub";
import { definition, downloadPng, downloadSvg, downloadJson, type PlotDefinition } from "./plotexport";
import type { StreamInfo } from "./types";

export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
/** Tail rows kept before the whole stream is fetched again downsampled. */
const REFETCH_FACTOR = 8;
const HEIGHT = 220;
/** Wait before a failed fetch of the whole stream is tried again (ms). */
const RETRY_MS = 2000;


export type Derive = "none" | "rate";

export interface PlotSpec {
  stream: string;
  fields: string[];
  /** Unset: rate when every field is a counter, else none. */
  derive?: Derive;
  /** Senders shown at first (the others hidden in the legend); unset or empty: all. */
  senders?: number[];
}

/** What a plot asks of the page around it. */
export interface PlotEnv {
  /** The run's events to draw (none outside a run page). */
  marks(): RunMark[];
  /** Why the data cannot be live (a device of the run is down), or null. */
  health(): string | null;
  /** The spec changed (derive switched): the page keeps it in its URL. */
  changed(): void;
}

export class LivePlot {
  readonly el: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly status: HTMLElement;
  private readonly csv: HTMLAnchorElement;
  private readonly parquet: HTMLAnchorElement;
  private readonly liveBtn: HTMLButtonElement;
  private readonly deriveBtn: HTMLButtonElement;
  private readonly unitsEl: HTMLElement;
  private u: uPlot | null = null;
  private sub: TailSubscription | null = null;
  private retry = 0;
  /** A fetch of the whole stream succeeded: the time of its newest row is known. */
  private loaded = false;
  /** Why the shared tail brings no rows, or "". */
  private tailError = "";
  private startTime = 0;
  /** The rows held (plotrows.ts); new ones when the derivation switches. */
  private rows: PlotRows;
  private maxId = 0;
  private lastRowId = 0;
  /** Newest row time seen (Unix s): "updated N s ago". */
  private newest = 0;
  private tailSinceFetch = 0;
  private seriesKeys: string[] = [];
  private seriesSenders: number[] = [];
  private seriesFields: string[] = [];
  private live = true;
  private range: [number, number] | null = null;
  private fetching = false;
  /** Counts fetches: only the latest one's answer is taken. */
  private generation = 0;
  private pendingTail: Record<string, unknown>[] = [];
  private dirty = false;
  private closed = false;
  private error = "";
  private readonly unsubscribe: () => void;
  private readonly ticker: number;

  constructor(
    private readonly expId: number,
    readonly spec: PlotSpec,
    private info: StreamInfo | undefined,
    private readonly env: PlotEnv,
    onRemove: (p: LivePlot) => void,
  ) {
    this.rows = new PlotRows(spec.fields);
    this.chartBox = h("div", { class: "chart" });
    this.status = h("div", { class: "plot-status" }, "loading…");
    this.csv = h("a", { class: "button small", download: `${spec.stream}.csv`, "data-format": "csv" }, "CSV");
    this.parquet = h("a", { class: "button small", download: `${spec.stream}.parquet`, "data-format": "parquet" }, "Parquet");
    this.liveBtn = h("button", { type: "button", class: "small live-toggle", onclick: () => this.goLive() }, "Live");
    this.deriveBtn = h("button", { type: "button", class: "small derive-toggle", title: "per-second rate or raw counter values", onclick: () => this.toggleDerive() }, "");
    this.unitsEl = h("span", { class: "muted units" });
    this.el = h(
      "div",
      { class: "plot", "data-stream": spec.stream, "data-fields": spec.fields.join(","), "data-points": "0", "data-live": "true" },
      h(
        "div",
        { class: "plot-head" },
        h("strong", null, spec.stream),
        " ",
        this.unitsEl,
        h("span", { class: "spacer" }),
        h("button", { type: "button", class: "small", title: "pan left", onclick: () => this.pan(-0.5) }, "←"),
        h("button", { type: "button", class: "small", title: "pan right", onclick: () => this.pan(0.5) }, "→"),
        h("button", { type: "button", class: "small", title: "zoom out", onclick: () => this.zoomOut() }, "−"),
        this.liveBtn,
        this.deriveBtn,
        this.csv,
        this.parquet,
        h("button", { type: "button", class: "small", "data-export": "png", title: "the plot as a PNG image", onclick: () => this.u && downloadPng(this.u, this.fileBase()) }, "PNG"),
        h("button", { type: "button", class: "small", "data-export": "svg", title: "the plot as an SVG drawing", onclick: () => this.exportSvg() }, "SVG"),
        h("button", { type: "button", class: "small", "data-export": "definition", title: "this plot's definition (JSON), for dashboards and `streamgauge plot`", onclick: () => downloadJson(this.definition(), `${this.fileBase()}.plot.json`) }, "Definition"),
        h("button", { type: "button", class: "small link", title: "remove this plot", onclick: () => { this.close(); onRemove(this); } }, "×"),
      ),
      this.chartBox,
      this.status,
    );
    this.labels();
    this.unsubscribe = onTimeChange(() => this.u?.redraw(false, true));
    this.ticker = window.setInterval(() => this.showStatus(), 1000);
  }

  /** The stream's description arrived (or changed): units, kinds. */
  setInfo(info: StreamInfo | undefined): void {
    // Plots from the address or a dashboard start before the stream
    // list is there: its kinds and units may change what is fetched
    // (rates) and the axes (a second one).
    const shape = (): string => `${this.derive()}|${this.y2Fields().join(",")}`;
    const before = shape();
    this.info = info;
    this.labels();
    if (shape() !== before && this.u) this.restart();
  }

  private field(f: string): { unit?: string; kind?: string } | undefined {
    return this.info?.fields.find((x) => x.name === f);
  }

  /** The derivation in effect: the spec's, else rate for all-counter plots. */
  derive(): Derive {
    if (this.spec.derive) return this.spec.derive;
    const counters = this.spec.fields.every((f) => this.field(f)?.kind === "counter");
    return counters && this.spec.fields.length > 0 ? "rate" : "none";
  }

  /** A field's unit as plotted (`B` → `B/s` for a rate). */
  unitOf(f: string): string {
    const u = this.field(f)?.unit ?? "";
    return this.derive() === "rate" ? (u ? `${u}/s` : "/s") : u;
  }

  /** Fields on the second y axis: those whose unit is not the first field's. */
  y2Fields(): string[] {
    const first = this.unitOf(this.spec.fields[0] ?? "");
    return this.spec.fields.filter((f) => this.unitOf(f) !== first);
  }

  private axisUnit(scale: "y" | "y2"): string {
    const y2 = new Set(this.y2Fields());
    const units = new Set(this.spec.fields.filter((f) => y2.has(f) === (scale === "y2")).map((f) => this.unitOf(f)));
    return units.size === 1 ? [...units][0]! : "";
  }

  private labels(): void {
    const rate = this.derive() === "rate";
    replace(this.unitsEl, this.spec.fields.map((f) => `${rate ? `rate of ${f}` : f}${this.unitOf(f) ? ` (${this.unitOf(f)})` : ""}`).join(", "));
    this.deriveBtn.textContent = rate ? "Raw" : "Rate";
    this.deriveBtn.title = rate ? "show the raw values" : "show per-second rates";
    this.el.dataset.derive = this.derive();
    this.el.dataset.y2 = this.y2Fields().join(",");
  }

  private toggleDerive(): void {
    this.spec.derive = this.derive() === "rate" ? "none" : "rate";
    this.labels();
    this.env.changed();
    this.restart();
  }

  /** Fetches everything again (units, axes and values may have changed). */
  private restart(): void {
    this.unfollow();
    this.u?.destroy();
    this.seriesKeys = [];
    this.rows = new PlotRows(this.spec.fields);
    this.makeChart();
    if (this.live) void this.loadAndFollow();
    else void this.fetch(this.range);
  }

  /** The y axis' tick labels, mirrored in data-y-ticks (they are drawn on the canvas). */
  private yTicks(scale: "y" | "y2", splits: number[], incr: number): string[] {
    const labels = siTicks(splits, incr, this.axisUnit(scale));
    this.el.dataset[scale === "y" ? "yTicks" : "y2Ticks"] = JSON.stringify(labels);
    return labels;
  }

  private xTicks(splits: number[], incr: number): string[] {
    const labels = timeTicks(splits, incr);
    this.el.dataset.xTicks = JSON.stringify(labels);
    return labels;
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
    await this.loadAndFollow();
  }

  /** Fetches the whole stream, then follows it; a failed fetch is tried again. */
  private async loadAndFollow(): Promise<void> {
    window.clearTimeout(this.retry);
    const r = await this.fetch(null);
    if (this.closed || r === "stale") return;
    if (r === "failed") {
      this.retry = window.setTimeout(() => this.live && !this.closed && void this.loadAndFollow(), RETRY_MS);
      return;
    }
    this.follow();
  }

  private width(): number {
    return Math.max(300, Math.floor(this.chartBox.clientWidth || this.el.clientWidth || 800));
  }

  private points(): number {
    return Math.max(64, this.width());
  }

  private makeChart(): void {
    const y2 = this.y2Fields().length > 0;
    const axes: uPlot.Axis[] = [
      { values: (_u, splits, _i, _space, incr) => this.xTicks(splits, incr), space: 90 },
      { scale: "y", size: 72, values: (_u, splits, _i, _space, incr) => this.yTicks("y", splits, incr) },
    ];
    if (y2) axes.push({ scale: "y2", side: 1, size: 72, grid: { show: false }, values: (_u, splits, _i, _space, incr) => this.yTicks("y2", splits, incr) });
    this.u = new uPlot(
      {
        width: this.width(),
        height: HEIGHT,
        series: [{ label: "time", value: (_u, v) => (v === null || v === undefined ? "—" : fmtInstant(v, 3)) }],
        scales: { x: { time: true, range: (_u, mn, mx) => this.xRange(mn, mx) }, y: { auto: true }, y2: { auto: true } },
        axes,
        cursor: { drag: { x: true, y: false, setScale: false }, bind: { dblclick: () => () => { this.goLive(); return null; } } },
        legend: { live: true },
        hooks: {
          setSelect: [(u) => this.onSelect(u)],
          draw: [(u) => { this.el.dataset.marks = JSON.stringify(drawMarks(u, this.env.marks())); this.onDraw(u); }],
          setSeries: [(u) => this.mirrorHidden(u)],
        },
      },
      [[]],
      this.chartBox,
    );
  }

  /** Live, the time axis spans the run's events too (its start, a stop after the last row). */
  private xRange(mn: number | null, mx: number | null): uPlot.Range.MinMax {
    if (!this.live || mn === null || mx === null) return [mn, mx];
    const ts = this.env.marks().map((m) => m.t);
    if (!ts.length) return [mn, mx];
    return [Math.min(mn, ...ts), Math.max(mx, ...ts)];
  }

  /**
   * Fetches the whole stream (`null`) or a range [from, to] in Unix s;
   * answers "stale" when a later fetch was started meanwhile (its answer
   * is then dropped: a switch to raw must not be overwritten by the
   * rates asked for before it).
   */
  private async fetch(range: [number, number] | null): Promise<"ok" | "failed" | "stale"> {
    const gen = ++this.generation;
    this.fetching = true;
    const q = new URLSearchParams({ fields: this.columns(), points: String(this.points()), gaps: String(GAP_FACTOR) });
    if (this.derive() === "rate") q.set("derive", "rate");
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
      if (this.closed || gen !== this.generation) return "stale";
      this.load(ans, range);
      this.error = "";
      this.redraw(range);
    } catch (e) {
      if (gen !== this.generation) return "stale";
      this.error = e instanceof Error ? e.message : String(e);
      this.showStatus();
      return "failed";
    } finally {
      if (gen === this.generation) this.fetching = false;
    }
    return "ok";
  }

  /** Takes a rows answer (with its gaps) as the rows held. */
  private load(ans: RowsAnswer, range: [number, number] | null): void {
    this.startTime = ans.start_time;
    const got = this.rows.load(ans, !range);
    if (!range) {
      this.maxId = Math.max(this.maxId, got.maxId);
      this.newest = Math.max(this.newest, got.newest);
      this.tailSinceFetch = 0;
      this.loaded = true;
      const pending = this.pendingTail;
      this.pendingTail = [];
      for (const row of pending) this.addRow(row);
    }
  }

  /** Follows the stream from the last row held, through the page's shared tail. */
  private follow(): void {
    this.unfollow();
    this.sub = subscribe(this.base(), this.maxId, {
      fields: this.spec.fields,
      rows: (rows: Row[]) => {
        for (const row of rows) {
          if (this.fetching) this.pendingTail.push(row);
          else this.addRow(row);
        }
      },
      lagged: () => {
        // Too far behind: fetch the whole stream again and follow from there.
        this.unfollow();
        void this.loadAndFollow();
      },
      error: (message) => {
        if (this.tailError === (message ?? "")) return;
        this.tailError = message ?? "";
        this.showStatus();
      },
    });
    this.showStatus();
  }

  private unfollow(): void {
    this.sub?.close();
    this.sub = null;
    this.tailError = "";
  }

  private addRow(row: Record<string, unknown>): void {
    const id = Number(row["oml_tuple_id"] ?? 0);
    if (id && id <= this.maxId) return;
    this.maxId = Math.max(this.maxId, id);
    this.lastRowId = id;
    const t = row["oml_ts_server"];
    if (typeof t !== "number") return;
    const x = this.startTime + t;
    this.newest = Math.max(this.newest, x);
    const s = Number(row["oml_sender_id"] ?? 0);
    const v = this.rows.tailValues(x, s, row, this.derive() === "rate");
    if (v === null || !this.live) return;
    this.rows.addTail(x, s, v);
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
    const c = this.rows.columns();
    const keys = c.keys;
    if (keys.join("\n") !== this.seriesKeys.join("\n")) {
      while (u.series.length > 1) u.delSeries(1);
      this.seriesKeys = keys;
      this.seriesFields = c.fields;
      this.seriesSenders = c.senders;
      const y2 = new Set(this.y2Fields());
      keys.forEach((key, i) => {
        const f = this.seriesFields[i]!;
        const sender = this.seriesSenders[i]!;
        const only = this.spec.senders ?? [];
        u.addSeries({
          label: key,
          show: !only.length || sender < 0 || only.includes(sender),
          scale: y2.has(f) ? "y2" : "y",
          value: (_u, v) => (v === null || v === undefined ? "—" : siFormat(v, this.unitOf(f))),
          stroke: PALETTE[i % PALETTE.length]!,
          width: 1.5,
          spanGaps: false,
        }, i + 1);
      });
      this.mirrorHidden(u);
    }
    const data = [this.rows.xs.slice(), ...c.cols] as uPlot.AlignedData;
    if (range) {
      u.batch(() => {
        u.setData(data, false);
        u.setScale("x", { min: range[0], max: range[1] });
      });
    } else {
      u.setData(data, true);
    }
  }

  private mirrorHidden(u: uPlot): void {
    this.el.dataset.hidden = JSON.stringify(u.series.slice(1).filter((s) => s.show === false).map((s) => String(s.label)));
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

  /** The visible time range (Unix s). */
  visible(): [number, number] | null {
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
    this.unfollow();
    void this.loadAndFollow();
  }

  private onDraw(u: uPlot): void {
    const ds = this.el.dataset;
    // Rows drawn; the break rows that end lines at gaps are not points.
    ds.points = String(this.rows.points());
    ds.lastId = String(this.lastRowId || this.maxId);
    ds.drawnAt = String(Date.now());
    const last: Record<string, number | null> = {};
    let breaks = 0;
    for (let s = 1; s < u.data.length; s++) {
      const col = u.data[s]!;
      let v: number | null | undefined = null;
      for (let i = col.length - 1; i >= 0; i--) {
        if (col[i] !== null && col[i] !== undefined) {
          v = col[i];
          break;
        }
      }
      // Interior nulls: the breaks drawn in this series.
      let seen = false;
      let inGap = false;
      for (let i = 0; i < col.length; i++) {
        if (col[i] === null) {
          if (seen && !inGap) breaks++;
          inGap = true;
        } else if (col[i] !== undefined) {
          seen = true;
          inGap = false;
        }
      }
      last[this.seriesKeys[s - 1] ?? `s${s}`] = v ?? null;
    }
    ds.breaks = String(breaks);
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
    if (this.derive() === "rate") q.set("derive", "rate");
    q.set("format", "csv");
    this.csv.href = `${this.base()}/rows?${q}`;
    q.set("format", "parquet");
    this.parquet.href = `${this.base()}/rows?${q}`;
  }

  /** The live state: down device, live, zoomed, and how fresh the data is. */
  private showStatus(): void {
    if (this.closed) return;
    const pts = Number(this.el.dataset.points ?? 0);
    const lastVals = this.el.dataset.last ? (JSON.parse(this.el.dataset.last) as Record<string, number | null>) : {};
    const down = this.env.health();
    const mode = this.sub?.mode() ?? "idle";
    const ago = this.loaded && this.newest ? Math.max(0, Math.round(Date.now() / 1000 - this.newest)) : null;
    this.el.dataset.state = down ? "down" : !this.live ? "zoomed" : mode;
    const error = this.error || this.tailError;
    replace(
      this.status,
      error ? h("span", { class: "error" }, error, " · ") : null,
      h("span", { class: "points" }, `${pts} points`),
      Object.entries(lastVals).map(([k, v]) => {
        const f = this.seriesFields[this.seriesKeys.indexOf(k)] ?? k;
        return [" · ", h("span", { class: "last", "data-series": k }, `${k} = ${v === null ? "—" : siFormat(v, this.unitOf(f))}`)];
      }),
      " · ",
      ago !== null
        ? h("span", { class: "updated", title: `newest row ${fmtInstant(this.newest, 3)}` }, `updated ${ago} s ago`)
        : h("span", { class: "updated" }, "not updated yet"),
      down
        ? [" · ", h("span", { class: "down" }, down)]
        : !this.live
          ? " · zoomed (drag to zoom, Live to follow)"
          : mode === "live"
            ? " · live"
            : mode === "polling"
              ? h("span", { class: "polling", title: "more streams are followed than live connections are kept open" }, ` · polling every ${POLL_MS / 1000} s`)
              : "",
    );
  }

  private fileBase(): string {
    return `${this.spec.stream}-${this.spec.fields.join("-")}`.replace(/[^A-Za-z0-9_.-]+/g, "_");
  }

  /** This plot as a definition (plotexport.ts, the `streamgauge plot` format). */
  definition(title?: string): PlotDefinition {
    const u = this.u;
    const hidden = new Set(u ? u.series.slice(1).flatMap((s, i) => (s.show === false ? [i] : [])) : []);
    const shown = new Set(this.seriesSenders.filter((s, i) => s >= 0 && !hidden.has(i)));
    const all = new Set(this.seriesSenders.filter((s) => s >= 0));
    const xs = this.rows.xs;
    const v = this.visible() ?? [xs[0] ?? 0, xs[xs.length - 1] ?? 0];
    return definition({
      title: title ?? `${this.spec.stream}: ${this.spec.fields.join(", ")}`,
      stream: this.spec.stream,
      fields: this.spec.fields,
      y2: this.y2Fields(),
      senders: shown.size < all.size ? [...shown].sort((a, b) => a - b) : [],
      from: v[0],
      to: v[1],
      derive: this.derive(),
      points: this.points(),
    });
  }

  private exportSvg(): void {
    const u = this.u;
    if (!u) return;
    downloadSvg(u, {
      title: `${this.spec.stream}: ${this.spec.fields.join(", ")}`,
      xTicks: (s, step) => timeTicks(s, step),
      yTicks: (scale, s, step) => siTicks(s, step, this.axisUnit(scale)),
      marks: this.env.marks(),
    }, `${this.fileBase()}.svg`);
  }

  /** Redraws (the run's marks or the device's state changed). */
  refresh(): void {
    // Live, the time axis is set again to take in new events.
    if (this.live && this.u && !this.fetching) this.redraw(null);
    else this.u?.redraw(false, false);
    this.showStatus();
  }

  /** Resizes to the container's width. */
  resize(): void {
    this.u?.setSize({ width: this.width(), height: HEIGHT });
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    window.clearInterval(this.ticker);
    window.clearTimeout(this.retry);
    this.unfollow();
    this.u?.destroy();
    this.u = null;
  }
}
