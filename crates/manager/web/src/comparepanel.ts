// The run page's "Compare runs": choose a stream, one numeric field and
// runs of the experiment (those started), and overlay them aligned at
// their start (compareplot.ts). Loaded when opened.

import { get, asList, errorText } from "./api";
import { h, replace } from "./dom";
import { ComparePlot, type RunSpan } from "./compareplot";
import { numericFields } from "./plotpanel";
import type { Run, StreamInfo } from "./types";

interface Events {
  start_unix_s: number | null;
  events: { time_unix_s: number; kind: string }[];
}

/** Runs compared at most (one colour each, and one request each). */
const MAX_RUNS = 8;

/** A run's span of data: its first start to its last stop, or now. */
async function span(r: Run): Promise<RunSpan | null> {
  const ev = await get<Events>(`/runs/${r.id}/events`);
  if (ev.start_unix_s === null) return null;
  const stops = ev.events.filter((e) => e.kind === "stop").map((e) => e.time_unix_s);
  const end = stops.length && ["stopped", "failed"].includes(r.state) ? Math.max(...stops) : Date.now() / 1000;
  return { id: r.id, start: ev.start_unix_s, end: Math.max(end, ev.start_unix_s + 1) };
}

export function comparePanel(expId: number, current: number, onLeave: (f: () => void) => void): HTMLElement {
  const body = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading…"));
  const out = h("div", { class: "plots", id: "compare-plots" });
  const box = h("details", { id: "compare" }, h("summary", null, "Compare runs"), body, out);
  let plot: ComparePlot | null = null;
  onLeave(() => plot?.close());
  let loaded = false;
  box.addEventListener("toggle", () => {
    if (!box.open || loaded) return;
    loaded = true;
    void load();
  });

  async function load(): Promise<void> {
    let streams: StreamInfo[];
    let runs: Run[];
    try {
      [streams, runs] = await Promise.all([
        get<unknown>(`/experiments/${expId}/streams`).then((v) => asList<StreamInfo>(v, "streams")),
        get<unknown>(`/experiments/${expId}/runs`).then((v) => asList<Run>(v, "runs")),
      ]);
    } catch (e) {
      replace(body, h("div", { class: "msg error" }, errorText(e)));
      return;
    }
    streams = streams.filter((s) => numericFields(s).length).sort((a, b) => a.name.localeCompare(b.name));
    runs = runs.filter((r) => r.state !== "created").sort((a, b) => a.id - b.id);
    if (!streams.length || !runs.length) {
      replace(body, h("p", { class: "muted" }, "Nothing to compare yet: the experiment needs started runs and a numeric stream."));
      return;
    }
    const streamSel = h("select", { id: "compare-stream" }, streams.map((s) => h("option", { value: s.name }, s.name)));
    const fieldSel = h("select", { id: "compare-field" });
    const fill = (): void => {
      const s = streams.find((x) => x.name === streamSel.value);
      replace(fieldSel, (s ? numericFields(s) : []).map((f) => h("option", { value: f }, f)));
    };
    streamSel.addEventListener("change", fill);
    fill();
    const runBox = h("div", { class: "checks", id: "compare-runs" }, runs.map((r) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", value: String(r.id), checked: runs.length <= MAX_RUNS || r.id === current }), ` run ${r.id}`)));
    const msg = h("span", { class: "muted", id: "compare-msg" });
    const go = h("button", { type: "button", class: "primary", id: "compare-go" }, "Compare");
    go.addEventListener("click", () => void compare());
    replace(body, h("div", { class: "inline" }, h("label", { for: "compare-stream" }, "Stream "), streamSel, fieldSel, runBox, go, " ", msg));

    async function compare(): Promise<void> {
      const ids = [...runBox.querySelectorAll<HTMLInputElement>("input:checked")].map((i) => Number(i.value));
      if (ids.length === 0 || ids.length > MAX_RUNS) {
        msg.textContent = `choose 1 to ${MAX_RUNS} runs`;
        return;
      }
      msg.textContent = "";
      let spans: RunSpan[];
      try {
        spans = (await Promise.all(runs.filter((r) => ids.includes(r.id)).map(span))).filter((s): s is RunSpan => s !== null);
      } catch (e) {
        msg.textContent = errorText(e);
        return;
      }
      const s = streams.find((x) => x.name === streamSel.value)!;
      const f = s.fields.find((x) => x.name === fieldSel.value);
      plot?.close();
      plot = new ComparePlot(expId, s.name, fieldSel.value, f?.unit ?? "", f?.kind === "counter");
      replace(out, plot.el);
      await plot.draw(spans);
    }
  }
  return box;
}
