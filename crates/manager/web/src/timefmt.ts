// One way to write times across the UI: `2026-11-28 21:02:43Z` (UTC,
// the default), the same in the browser's local time with its offset
// (`2026-11-28 22:02:43+01:00`), or relative to the run's start
// (`+0:01:02`). Tables, the status log and the plots' time axes all
// call these functions, so switching the mode (kept in localStorage)
// changes every time on the page at once.

export type TimeMode = "utc" | "local" | "relative";
export const TIME_MODES: [TimeMode, string][] = [
  ["utc", "UTC"],
  ["local", "local time"],
  ["relative", "relative to run start"],
];

const KEY = "streamgauge.time";
let mode: TimeMode = readMode();
/** Unix seconds that relative times count from (the run's start), or null. */
let origin: number | null = null;
const listeners = new Set<() => void>();

function readMode(): TimeMode {
  try {
    const v = localStorage.getItem(KEY);
    if (v === "utc" || v === "local" || v === "relative") return v;
  } catch {
    // storage refused (private mode): the default
  }
  return "utc";
}

export function timeMode(): TimeMode {
  return mode;
}

/** The mode in effect: relative needs an origin, else UTC. */
function effective(): TimeMode {
  return mode === "relative" && origin === null ? "utc" : mode;
}

export function setTimeMode(m: TimeMode): void {
  mode = m;
  try {
    localStorage.setItem(KEY, m);
  } catch {
    // not kept across reloads, still used on this page
  }
  for (const f of [...listeners]) f();
}

/** The run start that relative times count from (null: none on this page). */
export function setTimeOrigin(unixS: number | null): void {
  if (origin === unixS) return;
  origin = unixS;
  for (const f of [...listeners]) f();
}

export function timeOrigin(): number | null {
  return origin;
}

/** Calls `f` when the mode or origin changes; answers the unsubscriber. */
export function onTimeChange(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

const pad = (n: number, w = 2): string => String(Math.trunc(n)).padStart(w, "0");

/** Decimals of the seconds field: 0, 1, 2, 3. */
function frac(unixS: number, digits: number): string {
  if (digits <= 0) return "";
  const ms = Math.round((((unixS % 1) + 1) % 1) * 1000) % 1000;
  return "." + pad(ms, 3).slice(0, digits);
}

interface Parts {
  date: string;
  clock: string;
  zone: string;
}

function parts(unixS: number, m: "utc" | "local", digits: number): Parts {
  // Floor to the shown precision so 59.9996 s does not round up to a
  // time whose minute field is one behind.
  const d = new Date(Math.floor(unixS * 1000));
  if (m === "utc") {
    return {
      date: `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`,
      clock: `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac(unixS, digits)}`,
      zone: "Z",
    };
  }
  const off = -d.getTimezoneOffset();
  const zone = off === 0 ? "Z" : `${off < 0 ? "-" : "+"}${pad(Math.abs(off) / 60)}:${pad(Math.abs(off) % 60)}`;
  return {
    date: `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`,
    clock: `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${frac(unixS, digits)}`,
    zone,
  };
}

/** `+H:MM:SS[.fff]` (or `+Nd HH:MM:SS`) after the origin. */
function relative(unixS: number, from: number, digits: number): string {
  const dt = unixS - from;
  const sign = dt < 0 ? "-" : "+";
  const a = Math.abs(dt);
  const s = Math.floor(a);
  const days = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const body = `${days ? `${days}d ${pad(h)}` : h}:${pad((s % 3600) / 60)}:${pad(s % 60)}${frac(a, digits)}`;
  return sign + body;
}

/** A duration after a start, as relative times are written (`+0:01:02`). */
export function fmtOffset(seconds: number, digits = 0): string {
  return relative(seconds, 0, digits);
}

/** One instant in the page's mode; `digits` decimals of seconds (0-3). */
export function fmtInstant(unixS: number | null | undefined, digits = 0): string {
  if (unixS === null || unixS === undefined || !Number.isFinite(unixS)) return "—";
  const m = effective();
  if (m === "relative") return relative(unixS, origin!, digits);
  const p = parts(unixS, m, digits);
  return `${p.date} ${p.clock}${p.zone}`;
}

/** Decimals that tell apart instants `step` seconds apart. */
export function digitsFor(step: number): number {
  if (!(step > 0) || step >= 1) return 0;
  let d = 1;
  while (d < 3 && Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) > 1e-6) d++;
  return d;
}

/**
 * Time-axis tick labels in the page's mode: the first tick and any tick
 * on a new day carry the date, the others only the clock and zone, so
 * the axis reads like the tables without repeating the date.
 */
export function timeTicks(splits: number[], step: number): string[] {
  const digits = digitsFor(step);
  const m = effective();
  if (m === "relative") return splits.map((v) => relative(v, origin!, digits));
  let day = "";
  return splits.map((v) => {
    if (!Number.isFinite(v)) return "";
    const p = parts(v, m, digits);
    const label = p.date !== day ? `${p.date} ${p.clock}${p.zone}` : `${p.clock}${p.zone}`;
    day = p.date;
    return label;
  });
}

/** RFC 3339 UTC with milliseconds (for definitions and the query API). */
export function isoUtc(unixS: number): string {
  return new Date(Math.round(unixS * 1000)).toISOString();
}

/** A select that switches the page's time mode. */
export function timeModeSelect(onLeave: (f: () => void) => void, id = "time-mode"): HTMLSelectElement {
  const sel = document.createElement("select");
  sel.id = id;
  sel.title = "how times are written on this page";
  for (const [v, label] of TIME_MODES) {
    const o = document.createElement("option");
    o.value = v;
    o.textContent = label;
    sel.append(o);
  }
  sel.value = mode;
  sel.addEventListener("change", () => setTimeMode(sel.value as TimeMode));
  onLeave(onTimeChange(() => {
    if (sel.value !== mode) sel.value = mode;
  }));
  return sel;
}
