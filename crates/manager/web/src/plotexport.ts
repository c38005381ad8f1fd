// Figures out of a plot: PNG (the plot's canvas on white), SVG (axes,
// series and the run's events written from the plotted data, so the
// lines stay sharp at any size and can be edited), and the plot's
// definition, the JSON that dashboards store and `streamgauge plot`
// reads:
//
//   {"version":1,"title":…,"domain":…,"stream":…,"fields":[…],"y2":[…],
//    "senders":[…],"from":ISO,"to":ISO,"time":"server","derive":"none|rate",
//    "points":N,"timeaxis":"utc|local|relative"}

import type uPlot from "uplot";
import { markText, MARK_COLORS, type RunMark } from "./plotmarks";
import { isoUtc, timeMode } from "./timefmt";

export interface PlotDefinition {
  version: 1;
  title: string;
  domain: string;
  stream: string;
  fields: string[];
  y2: string[];
  senders: number[];
  from: string;
  to: string;
  time: "server";
  derive: "none" | "rate";
  points: number;
  timeaxis: "utc" | "local" | "relative";
}

let domain = "";

/** The experiment's domain, named in every definition made on this page. */
export function setDefinitionDomain(d: string): void {
  domain = d;
}

/** A definition in the exact key order of the format. */
export function definition(p: {
  title: string;
  stream: string;
  fields: string[];
  y2: string[];
  senders: number[];
  from: number;
  to: number;
  derive: "none" | "rate";
  points: number;
}): PlotDefinition {
  return {
    version: 1,
    title: p.title,
    domain,
    stream: p.stream,
    fields: p.fields.slice(),
    y2: p.y2.slice(),
    senders: p.senders.slice(),
    from: isoUtc(p.from),
    to: isoUtc(p.to),
    time: "server",
    derive: p.derive,
    points: Math.round(p.points),
    timeaxis: timeMode(),
  };
}

/** Checks a definition read back (a dashboard); answers what is wrong, or null. */
export function definitionError(v: unknown): string | null {
  if (!v || typeof v !== "object") return "not an object";
  const d = v as Record<string, unknown>;
  if (d["version"] !== 1) return "version must be 1";
  if (typeof d["stream"] !== "string" || !d["stream"]) return "stream must be a name";
  if (!Array.isArray(d["fields"]) || d["fields"].length === 0 || !d["fields"].every((f) => typeof f === "string")) return "fields must be a list of names";
  if (d["derive"] !== undefined && d["derive"] !== "none" && d["derive"] !== "rate") return "derive must be none or rate";
  return null;
}

function save(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function downloadJson(v: unknown, name: string): void {
  save(new Blob([JSON.stringify(v, null, 2) + "\n"], { type: "application/json" }), name);
}

/** The plot's canvas (series, axes, events) on a white background. */
export function downloadPng(u: uPlot, base: string): void {
  const src = u.ctx.canvas;
  const c = document.createElement("canvas");
  c.width = src.width;
  c.height = src.height;
  const ctx = c.getContext("2d")!;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.drawImage(src, 0, 0);
  c.toBlob((b) => b && save(b, `${base}.png`), "image/png");
}

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const n2 = (v: number): string => (Math.round(v * 100) / 100).toString();

/** Round steps: 1, 2, 5 × 10^k. */
function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** Time steps that read well: seconds, minutes, hours, days. */
function timeStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  if (raw < 1) return niceStep(span, count);
  for (const s of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400]) if (s >= raw) return s;
  return Math.ceil(raw / 86400) * 86400;
}

function splitsOf(min: number, max: number, step: number): number[] {
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9 && out.length < 50; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

export interface SvgLabels {
  title: string;
  xTicks(splits: number[], step: number): string[];
  yTicks(scale: "y" | "y2", splits: number[], step: number): string[];
  marks: RunMark[];
}

/** An SVG of the plot as shown: visible range, visible series, axes, events. */
export function plotSvg(u: uPlot, l: SvgLabels): string {
  const W = 900;
  const H = 360;
  const m = { l: 80, r: 80, t: 34, b: 46 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const xs = u.data[0] as number[];
  const sx = u.scales["x"]!;
  const x0 = sx.min ?? xs[0] ?? 0;
  const x1 = sx.max ?? xs[xs.length - 1] ?? 1;
  const X = (v: number): number => m.l + ((v - x0) / (x1 - x0 || 1)) * pw;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="${m.l}" y="18" font-size="13" font-weight="bold">${esc(l.title)}</text>`);
  // y ranges from the visible data of each scale.
  const ranges: Record<string, [number, number]> = {};
  u.series.forEach((s, i) => {
    if (i === 0 || s.show === false) return;
    const sc = s.scale ?? "y";
    const col = u.data[i] as (number | null | undefined)[];
    for (let k = 0; k < xs.length; k++) {
      const v = col[k];
      if (v === null || v === undefined || xs[k]! < x0 || xs[k]! > x1) continue;
      const r = (ranges[sc] ??= [v, v]);
      r[0] = Math.min(r[0], v);
      r[1] = Math.max(r[1], v);
    }
  });
  const Y: Record<string, (v: number) => number> = {};
  for (const [sc, r] of Object.entries(ranges)) {
    let [lo, hi] = r;
    if (lo === hi) {
      lo -= Math.abs(lo) * 0.1 || 1;
      hi += Math.abs(hi) * 0.1 || 1;
    }
    const step = niceStep(hi - lo, 5);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    Y[sc] = (v: number): number => m.t + ph - ((v - lo) / (hi - lo || 1)) * ph;
    const splits = splitsOf(lo, hi, step);
    const labels = l.yTicks(sc === "y2" ? "y2" : "y", splits, step);
    const right = sc === "y2";
    const ax = right ? m.l + pw : m.l;
    out.push(`<g class="axis" data-scale="${sc}">`);
    out.push(`<line x1="${ax}" y1="${m.t}" x2="${ax}" y2="${m.t + ph}" stroke="#333"/>`);
    splits.forEach((v, i) => {
      const y = n2(Y[sc]!(v));
      if (!right) out.push(`<line x1="${m.l}" y1="${y}" x2="${m.l + pw}" y2="${y}" stroke="#eee"/>`);
      out.push(`<text x="${right ? ax + 6 : ax - 6}" y="${y}" text-anchor="${right ? "start" : "end"}" dominant-baseline="middle">${esc(labels[i] ?? "")}</text>`);
    });
    out.push(`</g>`);
  }
  // x axis.
  const tstep = timeStep(x1 - x0, 5);
  const tsplits = splitsOf(x0, x1, tstep);
  const tl = l.xTicks(tsplits, tstep);
  out.push(`<g class="axis" data-scale="x"><line x1="${m.l}" y1="${m.t + ph}" x2="${m.l + pw}" y2="${m.t + ph}" stroke="#333"/>`);
  tsplits.forEach((v, i) => {
    const x = n2(X(v));
    out.push(`<line x1="${x}" y1="${m.t + ph}" x2="${x}" y2="${m.t + ph + 4}" stroke="#333"/><text x="${x}" y="${m.t + ph + 16}" text-anchor="middle">${esc(tl[i] ?? "")}</text>`);
  });
  out.push(`</g>`);
  // Series: one path each, a null (a gap) starts a new piece.
  let legendX = m.l;
  u.series.forEach((s, i) => {
    if (i === 0 || s.show === false) return;
    const y = Y[s.scale ?? "y"];
    if (!y) return;
    const col = u.data[i] as (number | null | undefined)[];
    let d = "";
    let pen = false;
    let pts = 0;
    for (let k = 0; k < xs.length; k++) {
      const v = col[k];
      if (v === undefined) continue;
      if (v === null || xs[k]! < x0 || xs[k]! > x1) {
        if (v === null) pen = false;
        continue;
      }
      d += `${pen ? "L" : "M"}${n2(X(xs[k]!))} ${n2(y(v))}`;
      pen = true;
      pts++;
    }
    const stroke = typeof s.stroke === "string" ? s.stroke : "#000";
    out.push(`<path class="series" data-label="${esc(String(s.label))}" data-points="${pts}" d="${d}" fill="none" stroke="${stroke}" stroke-width="1.5"/>`);
    out.push(`<line x1="${legendX}" y1="${H - 10}" x2="${legendX + 16}" y2="${H - 10}" stroke="${stroke}" stroke-width="2"/><text x="${legendX + 20}" y="${H - 6}">${esc(String(s.label))}</text>`);
    legendX += 30 + String(s.label).length * 7;
  });
  // The run's events.
  for (const mk of l.marks) {
    if (mk.t < x0 || mk.t > x1) continue;
    const x = n2(X(mk.t));
    const c = MARK_COLORS[mk.kind] ?? "#555";
    out.push(`<g class="mark" data-kind="${esc(mk.kind)}"><line x1="${x}" y1="${m.t}" x2="${x}" y2="${m.t + ph}" stroke="${c}" stroke-dasharray="5 3"/><text x="${x}" y="${m.t - 3}" fill="${c}">${esc(markText(mk))}</text></g>`);
  }
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}

export function downloadSvg(u: uPlot, l: SvgLabels, name: string): void {
  save(new Blob([plotSvg(u, l)], { type: "image/svg+xml" }), name);
}
