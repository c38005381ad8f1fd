// Choose a stream of the experiment and its fields, add live plots. The
// plots on the page are kept in the URL (`?plot=stream:f1,f2`, repeated)
// so a page of plots can be reloaded, bookmarked and shared.

import { get, asList, errorText } from "./api";
import { h, replace } from "./dom";
import { LivePlot, type PlotSpec } from "./liveplot";
import type { StreamInfo } from "./types";

const NUMERIC = new Set(["int32", "uint32", "int64", "uint64", "double", "float", "bool", "integer", "long"]);
const BOOKKEEPING = new Set(["oml_tuple_id", "oml_sender_id", "oml_seq", "oml_ts_client", "oml_ts_server"]);

export function parsePlotParam(v: string): PlotSpec | null {
  const i = v.indexOf(":");
  if (i <= 0) return null;
  const fields = v.slice(i + 1).split(",").filter(Boolean);
  return fields.length ? { stream: v.slice(0, i), fields } : null;
}

export function numericFields(s: StreamInfo): string[] {
  return s.fields.filter((f) => NUMERIC.has(f.type) && !BOOKKEEPING.has(f.name)).map((f) => f.name);
}

export async function plotPanel(expId: number, box: HTMLElement, onLeave: (f: () => void) => void): Promise<void> {
  const plots: LivePlot[] = [];
  const area = h("div", { class: "plots", id: "plots" });
  const chooser = h("div", { class: "card plot-chooser", id: "plot-chooser" }, h("p", { class: "muted" }, "Loading the experiment's streams…"));
  box.append(chooser, area);
  onLeave(() => {
    for (const p of plots) p.close();
  });
  const onResize = (): void => plots.forEach((p) => p.resize());
  window.addEventListener("resize", onResize);
  onLeave(() => window.removeEventListener("resize", onResize));

  let streams: StreamInfo[] = [];
  const syncUrl = (): void => {
    const q = new URLSearchParams(location.search);
    q.delete("plot");
    for (const p of plots) q.append("plot", `${p.spec.stream}:${p.spec.fields.join(",")}`);
    const s = q.toString();
    history.replaceState(null, "", location.pathname + (s ? `?${s}` : ""));
  };
  const add = (spec: PlotSpec, sync = true): void => {
    const p = new LivePlot(expId, spec, streams.find((s) => s.name === spec.stream), (gone) => {
      plots.splice(plots.indexOf(gone), 1);
      gone.el.remove();
      syncUrl();
    });
    plots.push(p);
    area.append(p.el);
    void p.start();
    if (sync) syncUrl();
  };

  // Plots named in the URL start at once, before the stream list arrives.
  for (const v of new URLSearchParams(location.search).getAll("plot")) {
    const spec = parsePlotParam(v);
    if (spec) add(spec, false);
  }

  try {
    streams = asList<StreamInfo>(await get<unknown>(`/experiments/${expId}/streams`), "streams");
  } catch (e) {
    replace(chooser, h("div", { class: "msg error", role: "alert" }, `Streams: ${errorText(e)}`));
    return;
  }
  streams.sort((a, b) => a.name.localeCompare(b.name));
  if (streams.length === 0) {
    replace(chooser, h("p", { class: "muted", id: "no-streams" }, "This experiment has no measurement stream yet (nothing was sent to its collection server, or it has none)."),
      h("button", { type: "button", onclick: () => { replace(chooser); void plotPanelRetry(); } }, "Look again"));
  }
  async function plotPanelRetry(): Promise<void> {
    for (const p of plots) p.close();
    plots.length = 0;
    replace(box);
    await plotPanel(expId, box, onLeave);
  }
  if (streams.length === 0) return;

  const streamSel = h("select", { id: "plot-stream" }, streams.map((s) => h("option", { value: s.name }, `${s.name}${s.rows !== undefined ? ` (${s.rows} rows)` : ""}`)));
  const fieldBox = h("div", { class: "checks", id: "plot-fields" });
  const fill = (): void => {
    const s = streams.find((x) => x.name === streamSel.value);
    const fields = s ? numericFields(s) : [];
    replace(fieldBox, fields.length
      ? fields.map((f, i) => h("label", { class: "check" }, h("input", { type: "checkbox", value: f, checked: i === 0 }), ` ${f}`))
      : h("span", { class: "muted" }, "no numeric field to plot"));
  };
  streamSel.addEventListener("change", fill);
  fill();
  const addBtn = h("button", { type: "button", id: "plot-add", class: "primary" }, "Add plot");
  addBtn.addEventListener("click", () => {
    const fields = [...fieldBox.querySelectorAll<HTMLInputElement>("input:checked")].map((i) => i.value);
    if (fields.length) add({ stream: streamSel.value, fields });
  });
  replace(chooser, h("div", { class: "inline" }, h("label", { for: "plot-stream" }, "Stream "), streamSel, fieldBox, addBtn));
}
