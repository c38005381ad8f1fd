// Runs side by side: one field of one stream in several runs of the
// experiment, each run's rows from its first start to its stop (or now),
// drawn against the time since its start so the runs line up. With three
// runs or more, their mean and spread (lowest to highest) are drawn too,
// on a common grid: each run's value in a grid interval (a hundredth of
// the longest run, and at least two row periods) is the mean of its
// points there, and each run is drawn by these values. Counters are compared as rates, as the plots draw
// them. Rows of all senders of a run are taken together.

import uPlot from "uplot";
import { API, ApiError } from "./api";
import { h, replace } from "./dom";
import { PALETTE } from "./liveplot";
import { siFormat, siTicks } from "./sifmt";
import { digitsFor, fmtOffset, isoUtc } from "./timefmt";
import { gridWidth, onGrid } from "./rungrid";

/** A run to compare: its id and the span of its data (Unix s). */
export interface RunSpan {
  id: number;
  start: number;
  end: number;
}

const HEIGHT = 240;

interface Series {
  run: number;
  xs: number[];
  ys: (number | null)[];
}

export class ComparePlot {
  readonly el: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly status: HTMLElement;
  private u: uPlot | null = null;

  constructor(
    private readonly expId: number,
    private readonly stream: string,
    private readonly field: string,
    private readonly unit: string,
    private readonly rate: boolean,
  ) {
    this.chartBox = h("div", { class: "chart" });
    this.status = h("div", { class: "plot-status" }, "loading…");
    this.el = h("div", { class: "plot compare", "data-stream": stream, "data-field": field },
      h("div", { class: "plot-head" }, h("strong", null, stream), " ", h("span", { class: "muted" }, `${rate ? "rate of " : ""}${field}${this.unitText()} by time since each run's start`)),
      this.chartBox, this.status);
  }

  private unitText(): string {
    const u = this.rate ? (this.unit ? `${this.unit}/s` : "/s") : this.unit;
    return u ? ` (${u})` : "";
  }

  private yUnit(): string {
    return this.rate ? (this.unit ? `${this.unit}/s` : "/s") : this.unit;
  }

  private async rows(r: RunSpan, points: number): Promise<Series> {
    const q = new URLSearchParams({ fields: `oml_ts_server,${this.field}`, points: String(points), from: isoUtc(r.start), to: isoUtc(r.end) });
    if (this.rate) q.set("derive", "rate");
    const resp = await fetch(`${API}/experiments/${this.expId}/query/streams/${encodeURIComponent(this.stream)}/rows?${q}`, { credentials: "same-origin" });
    if (!resp.ok) {
      const b = (await resp.json().catch(() => ({}))) as { error?: { message?: string } };
      throw new ApiError(resp.status, "query", `run ${r.id}: ${b.error?.message ?? resp.statusText}`, undefined);
    }
    const ans = (await resp.json()) as { start_time: number; fields: { name: string }[]; rows: unknown[][] };
    const iT = ans.fields.findIndex((f) => f.name === "oml_ts_server");
    const iV = ans.fields.findIndex((f) => f.name === this.field);
    const rows = ans.rows.filter((x) => typeof x[iT] === "number").sort((a, b) => (a[iT] as number) - (b[iT] as number));
    return {
      run: r.id,
      xs: rows.map((x) => ans.start_time + (x[iT] as number) - r.start),
      ys: rows.map((x) => (typeof x[iV] === "number" ? (x[iV] as number) : null)),
    };
  }

  /** Fetches every run's rows and draws them. */
  async draw(runs: RunSpan[]): Promise<void> {
    const width = Math.max(300, Math.floor(this.chartBox.clientWidth || 800));
    let series: Series[];
    try {
      series = await Promise.all(runs.map((r) => this.rows(r, width)));
    } catch (e) {
      replace(this.status, h("span", { class: "error" }, e instanceof Error ? e.message : String(e)));
      return;
    }
    const span = Math.max(0, ...series.map((s) => s.xs[s.xs.length - 1] ?? 0));
    const band = series.length >= 3;
    const g = onGrid(series, span, gridWidth(series, span));
    const fmt = (_u: uPlot, v: number | null): string => (v === null || v === undefined ? "—" : siFormat(v, this.yUnit()));
    // Each run as its grid means: the senders of a run together, and an
    // empty interval (a silence) breaks its line.
    const cols: (number | null)[][] = [...g.runs];
    const opts: uPlot.Series[] = [{ label: "since start", value: (_u, v) => (v === null || v === undefined ? "—" : fmtOffset(v, 1)) }];
    series.forEach((s, i) => opts.push({ label: `run ${s.run}`, stroke: PALETTE[i % PALETTE.length]!, width: 1.2, value: fmt }));
    const bands: uPlot.Band[] = [];
    if (band) {
      cols.push(g.mean, g.hi, g.lo);
      opts.push({ label: "mean", stroke: "#111", width: 2.5, value: fmt });
      opts.push({ label: "highest", stroke: "rgba(0,0,0,0.25)", width: 0.5, value: fmt });
      opts.push({ label: "lowest", stroke: "rgba(0,0,0,0.25)", width: 0.5, value: fmt });
      const hi = opts.length - 2;
      bands.push({ series: [hi, hi + 1], fill: "rgba(0,0,0,0.10)" });
      const means = g.mean.filter((v) => v !== null);
      this.el.dataset.mean = JSON.stringify(means.length ? means.reduce((a, v) => a + v!, 0) / means.length : null);
      this.el.dataset.meanPoints = String(means.length);
    }
    const data = [g.x, ...cols] as uPlot.AlignedData;
    this.u?.destroy();
    this.u = new uPlot({
      width,
      height: HEIGHT,
      series: opts,
      bands,
      scales: { x: { time: false } },
      axes: [
        { values: (_u, splits, _i, _s, incr) => splits.map((v) => fmtOffset(v, digitsFor(incr))), space: 80 },
        { size: 72, values: (_u, splits, _i, _s, incr) => siTicks(splits, incr, this.yUnit()) },
      ],
    }, data, this.chartBox);
    const ds = this.el.dataset;
    ds.runs = series.map((s) => s.run).join(",");
    ds.band = String(band);
    ds.points = JSON.stringify(Object.fromEntries(series.map((s) => [s.run, s.ys.filter((v) => v !== null).length])));
    replace(this.status, `${series.length} runs · ${series.map((s) => `run ${s.run}: ${s.ys.filter((v) => v !== null).length} points`).join(" · ")}${band ? " · mean and spread (lowest to highest) of the runs" : ""}`);
  }

  close(): void {
    this.u?.destroy();
    this.u = null;
  }
}
