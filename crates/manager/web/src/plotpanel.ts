// Choose a stream of the experiment and its fields, add live plots. The
// plots on the page are kept in the URL (`?plot=stream:f1,f2`, repeated;
// `;rate` or `;raw` when the derivation was switched from its default)
// so a page of plots can be reloaded, bookmarked and shared. The stream
// list is asked again every few seconds, so streams that appear during a
// run can be plotted without reloading, and the row counts stay current.

import { get, put, asList, errorText } from "./api";
import { h, replace } from "./dom";
import { LivePlot, type PlotEnv, type PlotSpec } from "./liveplot";
import { setTimeMode, timeModeSelect, type TimeMode } from "./timefmt";
import { definitionError, type PlotDefinition } from "./plotexport";
import type { RunMark } from "./plotmarks";
import type { StreamInfo } from "./types";

const NUMERIC = new Set(["int32", "uint32", "int64", "uint64", "double", "float", "bool", "integer", "long"]);
const BOOKKEEPING = new Set(["oml_tuple_id", "oml_sender_id", "oml_seq", "oml_ts_client", "oml_ts_server"]);
/** How often the stream list is asked again (ms). */
const STREAMS_EVERY_MS = 3000;

export function parsePlotParam(v: string): PlotSpec | null {
  const i = v.indexOf(":");
  if (i <= 0) return null;
  const [list, opt] = v.slice(i + 1).split(";", 2);
  const fields = (list ?? "").split(",").filter(Boolean);
  if (!fields.length) return null;
  const spec: PlotSpec = { stream: v.slice(0, i), fields };
  if (opt === "rate") spec.derive = "rate";
  else if (opt === "raw") spec.derive = "none";
  return spec;
}

export function plotParam(s: PlotSpec): string {
  const opt = s.derive === "rate" ? ";rate" : s.derive === "none" ? ";raw" : "";
  return `${s.stream}:${s.fields.join(",")}${opt}`;
}

export function numericFields(s: StreamInfo): string[] {
  return s.fields.filter((f) => NUMERIC.has(f.type) && !BOOKKEEPING.has(f.name)).map((f) => f.name);
}

/** What the run page adds to its plots: events and the devices' state. */
export interface RunContext {
  marks(): RunMark[];
  health(): string | null;
}

/** The panel's plots, for the page around it (redraws, dashboards). */
export interface PanelHandle {
  plots: LivePlot[];
  add(spec: PlotSpec): void;
  refresh(): void;
}

export async function plotPanel(expId: number, box: HTMLElement, onLeave: (f: () => void) => void, run?: RunContext): Promise<PanelHandle> {
  const plots: LivePlot[] = [];
  const area = h("div", { class: "plots", id: "plots" });
  const chooser = h("div", { class: "card plot-chooser", id: "plot-chooser" }, h("p", { class: "muted" }, "Loading the experiment's streams…"));
  const timeSel = timeModeSelect(onLeave);
  const dashSel = h("select", { id: "dash-select", title: "open a saved dashboard (its plots replace these)" });
  const dashMsg = h("span", { class: "muted", id: "dash-msg" });
  const saveBtn = h("button", { type: "button", id: "dash-save", title: "save these plots as a dashboard of the experiment" }, "Save as dashboard…");
  const timeBar = h("div", { class: "inline time-bar" }, h("label", { for: "time-mode" }, "Times "), timeSel,
    h("label", { for: "dash-select" }, " Dashboard "), dashSel, saveBtn, " ", dashMsg);
  box.append(timeBar, chooser, area);
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
    for (const p of plots) q.append("plot", plotParam(p.spec));
    const s = q.toString();
    history.replaceState(null, "", location.pathname + (s ? `?${s}` : ""));
  };
  const env: PlotEnv = {
    marks: () => run?.marks() ?? [],
    health: () => run?.health() ?? null,
    changed: syncUrl,
  };
  const add = (spec: PlotSpec, sync = true): void => {
    const p = new LivePlot(expId, spec, streams.find((s) => s.name === spec.stream), env, (gone) => {
      plots.splice(plots.indexOf(gone), 1);
      gone.el.remove();
      syncUrl();
    });
    plots.push(p);
    area.append(p.el);
    void p.start();
    if (sync) syncUrl();
  };
  const handle: PanelHandle = { plots, add: (s) => add(s), refresh: () => plots.forEach((p) => p.refresh()) };

  // Plots named in the URL start at once, before the stream list arrives.
  const named = new URLSearchParams(location.search).getAll("plot");
  for (const v of named) {
    const spec = parsePlotParam(v);
    if (spec) add(spec, false);
  }

  // Dashboards: saved lists of plot definitions; without plots in the
  // URL, the last saved one (or `?dashboard=NAME`) is opened.
  let dashboards: { name: string; plots: PlotDefinition[] }[] = [];
  const open = (name: string): void => {
    const d = dashboards.find((x) => x.name === name);
    if (!d) return;
    for (const p of plots) {
      p.close();
      p.el.remove();
    }
    plots.length = 0;
    const ok = d.plots.filter((p) => definitionError(p) === null);
    if (ok[0]?.timeaxis) setTimeMode(ok[0].timeaxis as TimeMode);
    for (const def of ok) add({ stream: def.stream, fields: def.fields, derive: def.derive, senders: def.senders }, false);
    const q = new URLSearchParams(location.search);
    q.set("dashboard", name);
    history.replaceState(null, "", `${location.pathname}?${q}`);
    syncUrl();
    dashSel.value = name;
    dashMsg.textContent = ok.length < d.plots.length ? `${d.plots.length - ok.length} plot(s) of ${name} could not be read` : "";
  };
  const loadDashboards = async (): Promise<void> => {
    dashboards = asList<{ name: string; plots: PlotDefinition[] }>(await get<unknown>(`/experiments/${expId}/dashboards`));
    const chosen = dashSel.value;
    replace(dashSel, h("option", { value: "" }, dashboards.length ? "—" : "none saved"), dashboards.map((d) => h("option", { value: d.name }, d.name)));
    dashSel.value = dashboards.some((d) => d.name === chosen) ? chosen : "";
  };
  dashSel.addEventListener("change", () => dashSel.value && open(dashSel.value));
  saveBtn.addEventListener("click", () => {
    if (!plots.length) {
      dashMsg.textContent = "add plots first";
      return;
    }
    const name = prompt("Save these plots as the dashboard named:", dashSel.value || "main");
    if (!name) return;
    void put(`/experiments/${expId}/dashboards/${encodeURIComponent(name)}`, { plots: plots.map((p) => p.definition()) })
      .then(async () => {
        await loadDashboards();
        dashSel.value = name;
        dashMsg.textContent = `saved as ${name}`;
      })
      .catch((e) => (dashMsg.textContent = `not saved: ${errorText(e)}`));
  });
  try {
    await loadDashboards();
    const wanted = new URLSearchParams(location.search).get("dashboard");
    if (!named.length && dashboards.length) open(wanted && dashboards.some((d) => d.name === wanted) ? wanted : dashboards[0]!.name);
  } catch (e) {
    dashMsg.textContent = `dashboards: ${errorText(e)}`;
  }

  const streamSel = h("select", { id: "plot-stream" });
  const fieldBox = h("div", { class: "checks", id: "plot-fields" });
  const fill = (): void => {
    const s = streams.find((x) => x.name === streamSel.value);
    const fields = s ? numericFields(s) : [];
    replace(fieldBox, fields.length
      ? fields.map((f, i) => {
          const info = s?.fields.find((x) => x.name === f);
          const note = [info?.unit, info?.kind === "counter" ? "counter" : ""].filter(Boolean).join(", ");
          return h("label", { class: "check" }, h("input", { type: "checkbox", value: f, checked: i === 0 }), ` ${f}`, note ? h("small", { class: "muted" }, ` (${note})`) : null);
        })
      : h("span", { class: "muted" }, "no numeric field to plot"));
  };
  streamSel.addEventListener("change", fill);
  const addBtn = h("button", { type: "button", id: "plot-add", class: "primary" }, "Add plot");
  addBtn.addEventListener("click", () => {
    const fields = [...fieldBox.querySelectorAll<HTMLInputElement>("input:checked")].map((i) => i.value);
    if (fields.length) add({ stream: streamSel.value, fields });
  });
  const form = h("div", { class: "inline" }, h("label", { for: "plot-stream" }, "Stream "), streamSel, fieldBox, addBtn);

  /** Shows the list as it is now; keeps the chosen stream and ticked fields. */
  const show = (list: StreamInfo[]): void => {
    const before = streams.map((s) => s.name).join("\n");
    streams = list.sort((a, b) => a.name.localeCompare(b.name));
    for (const p of plots) p.setInfo(streams.find((s) => s.name === p.spec.stream));
    if (streams.length === 0) {
      if (!chooser.querySelector("#no-streams")) {
        replace(chooser, h("p", { class: "muted", id: "no-streams" }, "This experiment has no measurement stream yet (nothing was sent to its collection server, or it has none). Streams appear here as they arrive."));
      }
      return;
    }
    const label = (s: StreamInfo): string => `${s.name}${s.rows !== undefined ? ` (${s.rows} rows)` : ""}`;
    if (before === streams.map((s) => s.name).join("\n") && streamSel.options.length === streams.length) {
      // The same streams: only the row counts change (an open list stays open).
      streams.forEach((s, i) => {
        const o = streamSel.options[i]!;
        if (o.textContent !== label(s)) o.textContent = label(s);
      });
    } else {
      const chosen = streamSel.value;
      replace(streamSel, streams.map((s) => h("option", { value: s.name }, label(s))));
      if (streams.some((s) => s.name === chosen)) streamSel.value = chosen;
    }
    if (!chooser.contains(form)) replace(chooser, form);
    if (before !== streams.map((s) => s.name).join("\n") || !fieldBox.childElementCount) fill();
  };

  const load = async (): Promise<void> => {
    try {
      show(asList<StreamInfo>(await get<unknown>(`/experiments/${expId}/streams`), "streams"));
    } catch (e) {
      replace(chooser, h("div", { class: "msg error", role: "alert" }, `Streams: ${errorText(e)}`));
    }
  };
  await load();
  if (chooser.querySelector("[role=alert]")) return handle;
  let busy = false;
  const timer = window.setInterval(() => {
    if (busy) return;
    busy = true;
    void load().finally(() => (busy = false));
  }, STREAMS_EVERY_MS);
  onLeave(() => window.clearInterval(timer));
  return handle;
}
