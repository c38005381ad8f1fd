// The run's events on its plots: start, pause, resume and stop of the
// run, and its devices going down and coming back, from the manager's
// own records (`GET /api/v1/runs/{id}/events`), drawn as labelled
// vertical lines over every plot of the run page.

import type uPlot from "uplot";

/** One event at one instant. */
export interface RunMark {
  /** Unix seconds. */
  t: number;
  /** `start`, `pause`, `resume`, `stop`, `device_down`, `device_up`. */
  kind: string;
  /** Short text beside the line. */
  label: string;
}

export const MARK_COLORS: Record<string, string> = {
  start: "#2ca02c",
  resume: "#2ca02c",
  pause: "#ff7f0e",
  stop: "#d62728",
  device_down: "#7f1d1d",
  device_up: "#1f77b4",
};

/** The short text of an event, as drawn. */
export function markText(m: RunMark): string {
  return m.label || m.kind.replace("_", " ");
}

/**
 * Draws the marks inside the plot area of `u` (after uPlot drew the
 * series) and answers those drawn, `kind@t`, for data-marks.
 */
export function drawMarks(u: uPlot, marks: RunMark[]): string[] {
  const x = u.scales["x"];
  if (!x || x.min === undefined || x.max === undefined || x.min === null || x.max === null) return [];
  const { ctx } = u;
  const { left, top, height, width } = u.bbox;
  const drawn: string[] = [];
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  const px = devicePixelRatio || 1;
  ctx.font = `${Math.round(10 * px)}px sans-serif`;
  ctx.textBaseline = "top";
  for (const m of marks) {
    if (m.t < x.min || m.t > x.max) continue;
    const pos = Math.round(u.valToPos(m.t, "x", true)) + 0.5;
    const color = MARK_COLORS[m.kind] ?? "#555";
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = px;
    ctx.setLineDash(m.kind.startsWith("device") ? [2 * px, 3 * px] : [5 * px, 3 * px]);
    ctx.beginPath();
    ctx.moveTo(pos, top);
    ctx.lineTo(pos, top + height);
    ctx.stroke();
    // Labels right of their line, or left of it near the right edge.
    const right = pos > left + width - 60 * px;
    ctx.textAlign = right ? "right" : "left";
    ctx.fillText(markText(m), pos + (right ? -3 : 3) * px, top + 2 * px + (drawn.length % 3) * 11 * px);
    drawn.push(`${m.kind}@${m.t}`);
  }
  ctx.restore();
  return drawn;
}
