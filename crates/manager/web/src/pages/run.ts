// The results page of a run: state and control, per-device counters and
// the status log (both polled live), the files with download links, and
// live plots of the experiment's streams with the run's events (start,
// pause, resume, stop, devices down and up) drawn on them; times
// relative to the run count from its first start.

/** What `GET /runs/{id}/events` answers. */
interface RunEvents {
  start_unix_s: number | null;
  events: { time_unix_s: number; kind: string; device: number | null; message: string }[];
  devices: { device: number; name: string; status: string; down_since_unix_s: number | null }[];
}

import { get, asList, errorText } from "../api";
import { counterTable, type CounterRow, type DeviceStatus } from "../countertable";
import { h, Message, replace, fmtBytes, fmtTime } from "../dom";
import { plotPanel, type PanelHandle } from "../plotpanel";
import { setDefinitionDomain } from "../plotexport";
import { comparePanel } from "../comparepanel";
import type { RunMark } from "../plotmarks";
import { fmtInstant, onTimeChange, setTimeOrigin, timeMode, timeOrigin } from "../timefmt";
import { runButtons, stateBadge } from "../runctl";
import type { CaptureConfig, Device, Experiment, PageCtx, Run, RunFile } from "../types";

/** Log lines from whatever shape the log has (strings, events, per device). */
export function logLines(v: unknown, deviceName: (d: number) => string): string[] {
  const out: string[] = [];
  const one = (x: unknown, prefix = ""): void => {
    if (typeof x === "string") out.push(prefix + x);
    else if (x && typeof x === "object") {
      const o = x as Record<string, unknown>;
      if (Array.isArray(o["lines"])) {
        const p = typeof o["device"] === "number" ? `${deviceName(o["device"])}: ` : prefix;
        for (const l of o["lines"]) one(l, p);
        if (typeof o["error"] === "string" && o["error"]) out.push(`${p}error: ${o["error"]}`);
        return;
      }
      const t = o["unix_s"] ?? o["time_unix_s"] ?? o["time"] ?? o["at_unix_s"];
      const time = typeof t === "number" ? fmtTime(t) + " " : typeof t === "string" ? t + " " : "";
      const dev = typeof o["device"] === "number" ? `${deviceName(o["device"])}: ` : prefix;
      const text = o["message"] ?? o["event"] ?? o["line"] ?? o["text"] ?? JSON.stringify(o);
      out.push(`${time}${dev}${String(text)}`);
    }
  };
  if (Array.isArray(v)) for (const x of v) one(x);
  else if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    for (const k of ["events", "lines", "log"]) if (Array.isArray(o[k])) for (const x of o[k] as unknown[]) one(x);
    if (Array.isArray(o["devices"])) for (const d of o["devices"] as unknown[]) one(d);
  }
  return out;
}

export async function runPage({ app, params, onLeave }: PageCtx): Promise<void> {
  const id = Number(params[0]);
  const msg = new Message();
  let run: Run;
  try {
    run = await get<Run>(`/runs/${id}`);
  } catch (e) {
    app.append(h("h1", null, `Run ${id}`), h("div", { class: "msg error", role: "alert" }, errorText(e)));
    return;
  }
  const [exp, devices, cfg] = await Promise.all([
    get<Experiment>(`/experiments/${run.experiment}`).catch(() => null),
    get<unknown>("/devices").then((d) => asList<Device>(d, "devices")).catch(() => [] as Device[]),
    get<CaptureConfig>(`/configs/${run.config}`).catch(() => null),
  ]);
  const deviceName = (d: number): string => devices.find((x) => x.id === d)?.name ?? `device ${d}`;

  const head = h("div", { class: "run-head", id: "run-head" });
  const counters = h("div", { id: "counters" }, h("p", { class: "muted" }, "Loading counters…"));
  const log = h("pre", { id: "run-log", class: "log" }, "Loading the log…");
  const files = h("div", { id: "files" }, h("p", { class: "muted" }, "Loading files…"));
  const plots = h("section", { id: "plot-panel" });

  const renderHead = (): void => {
    replace(head, "State ", stateBadge(run.state), " ", runButtons(run, (r) => {
      run = r;
      renderHead();
      void refresh();
      void loadFiles();
    }, (m) => msg.error(m)));
  };

  app.append(
    h("p", { class: "crumbs" }, h("a", { href: "/experiments" }, "Experiments"), " / ",
      h("a", { href: `/experiments/${run.experiment}` }, exp?.name ?? `experiment ${run.experiment}`), ` / run ${id}`),
    h("h1", null, `Run #${id}`, cfg ? h("small", null, ` configuration ${cfg.name}`) : null),
    head,
    msg.el,
    h("div", { class: "two" },
      h("section", null, h("h2", null, "Devices and counters (live)"), counters),
      h("section", null, h("h2", null, "Status log (live)"), log),
    ),
    h("section", null, h("h2", null, "Files"), files),
    h("section", null, h("h2", null, "Live plots"), plots),
    h("section", null, comparePanel(run.experiment, id, onLeave)),
  );
  renderHead();

  async function refresh(): Promise<void> {
    try {
      const [r, st] = await Promise.all([get<Run>(`/runs/${id}`), get<unknown>(`/runs/${id}/status`)]);
      if (r.state !== run.state) {
        run = r;
        renderHead();
      }
      run = r;
      const list = asList<DeviceStatus>(st, "devices");
      const rows: CounterRow[] = (list.length ? list : run.devices).map((status) => ({ status, device: devices.find((x) => x.id === status.device) }));
      const agents = rows.filter((r) => r.device?.kind === "inline");
      const captures = rows.filter((r) => r.device?.kind !== "inline");
      replace(counters,
        captures.length ? counterTable(captures, run, false, deviceName) : null,
        agents.length ? counterTable(agents, run, true, deviceName) : null);
    } catch (e) {
      msg.error(errorText(e));
    }
    try {
      const lines = logLines(await get<unknown>(`/runs/${id}/log`), deviceName);
      const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.textContent = lines.length ? lines.join("\n") : "(no events yet)";
      if (atEnd) log.scrollTop = log.scrollHeight;
    } catch (e) {
      log.textContent = `log: ${errorText(e)}`;
    }
  }

  let shownFiles = "";
  async function loadFiles(): Promise<void> {
    try {
      const list = asList<RunFile>(await get<unknown>(`/runs/${id}/files`), "files");
      list.sort((a, b) => a.device - b.device || a.name.localeCompare(b.name));
      // Rebuilt only when something shown changed (a link being clicked stays).
      const seen = JSON.stringify(list) + fmtTime(0);
      if (seen === shownFiles) return;
      shownFiles = seen;
      replace(files, list.length === 0
        ? h("p", { class: "muted" }, "No files yet.")
        : h("table", { class: "data", id: "file-table" },
            h("thead", null, h("tr", null, h("th", null, "Device"), h("th", null, "File"), h("th", null, "Size"), h("th", null, "Modified"))),
            h("tbody", null, list.map((f) => h("tr", null,
              h("td", null, deviceName(f.device)),
              h("td", null, h("a", { href: f.url || `/api/v1/runs/${id}/files/${f.device}/${encodeURIComponent(f.name)}`, download: f.name, class: "file" }, f.name)),
              h("td", { class: "num" }, fmtBytes(f.bytes)),
              h("td", null, fmtTime(f.modified_unix_s)),
            )))));
    } catch (e) {
      replace(files, h("div", { class: "msg error" }, errorText(e)));
    }
  }

  // The run's events for the plots, and whether its devices are up.
  let marks: RunMark[] = [];
  let down: string | null = null;
  let panel: PanelHandle | null = null;
  setTimeOrigin(run.created_unix_s);
  onLeave(() => setTimeOrigin(null));
  async function loadEvents(): Promise<void> {
    try {
      const ev = await get<RunEvents>(`/runs/${id}/events`);
      marks = ev.events.map((e) => ({ t: e.time_unix_s, kind: e.kind, label: e.kind.replace("_", " ") }));
      const gone = ev.devices.filter((d) => d.status === "down");
      down = gone.length
        ? gone.map((d) => `device ${d.name} is down${d.down_since_unix_s !== null ? ` since ${fmtInstant(d.down_since_unix_s)}` : ""}`).join("; ")
        : null;
      setTimeOrigin(ev.start_unix_s ?? run.created_unix_s);
      panel?.refresh();
    } catch {
      // the next poll tries again; the plots keep what they drew
    }
  }
  // Times are written again when what they are written as changes.
  const timeKey = (): string => (timeMode() === "relative" ? `relative@${timeOrigin()}` : timeMode());
  let lastKey = timeKey();
  onLeave(onTimeChange(() => {
    if (timeKey() === lastKey) return;
    lastKey = timeKey();
    void refresh();
    void loadFiles();
  }));
  if (exp) setDefinitionDomain(exp.domain);

  await Promise.all([refresh(), loadEvents()]);
  void loadFiles();
  const t1 = window.setInterval(() => void refresh(), 1000);
  const t2 = window.setInterval(() => void loadFiles(), 5000);
  const t3 = window.setInterval(() => void loadEvents(), 2000);
  onLeave(() => {
    window.clearInterval(t1);
    window.clearInterval(t2);
    window.clearInterval(t3);
  });
  panel = await plotPanel(run.experiment, plots, onLeave, { marks: () => marks, health: () => down });
}
