// Numbers for people, at any scale: SI prefixes below 1e-3 and from 1e6
// (0.000042 s → "42 µs", 2.5e9 → "2.5 G"), plain decimals between, and
// axis ticks that share one prefix with as many decimals as their step
// needs, so microsecond delays are not all drawn as "0".

const PREFIXES: [number, string][] = [
  [12, "T"], [9, "G"], [6, "M"], [0, ""], [-3, "m"], [-6, "µ"], [-9, "n"], [-12, "p"],
];

/** The power of ten (a multiple of 3, or 0) that writes `mag` readably. */
function exponentFor(mag: number, unit: string): number {
  if (mag === 0 || !Number.isFinite(mag)) return 0;
  // With a unit, milli reads well ("250 ms"); without one, 0.25 stays 0.25.
  const plainFrom = unit ? 1 : 1e-3;
  if (mag >= plainFrom && mag < 1e6) return 0;
  const e = Math.floor(Math.log10(mag) / 3) * 3;
  return Math.max(-12, Math.min(12, e));
}

function prefixOf(e: number): string {
  return PREFIXES.find(([p]) => p === e)?.[1] ?? `e${e}`;
}

function suffix(e: number, unit: string): string {
  const p = prefixOf(e);
  return p || unit ? ` ${p}${unit}` : "";
}

/** `v` with `digits` significant digits and an SI prefix when far from 1. */
export function siFormat(v: number, unit = "", digits = 4): string {
  if (!Number.isFinite(v)) return String(v);
  const e = exponentFor(Math.abs(v), unit);
  const scaled = v / 10 ** e;
  const intDigits = Math.abs(scaled) >= 1 ? Math.floor(Math.log10(Math.abs(scaled))) + 1 : 1;
  const text = Number(scaled.toPrecision(Math.max(digits, intDigits))).toString();
  return text + suffix(e, unit);
}

/** Tick labels: one prefix for all (from the largest), decimals from the step. */
export function siTicks(splits: number[], step: number, unit = ""): string[] {
  const mag = Math.max(0, ...splits.filter(Number.isFinite).map(Math.abs));
  const e = exponentFor(mag, unit);
  const scaledStep = Math.abs(step) / 10 ** e;
  let decimals = 0;
  while (decimals < 12 && scaledStep > 0 && Math.abs(Math.round(scaledStep * 10 ** decimals) - scaledStep * 10 ** decimals) > 1e-6) decimals++;
  return splits.map((v) => {
    if (!Number.isFinite(v)) return "";
    const s = (v / 10 ** e).toFixed(decimals);
    return (/^-0(\.0*)?$/.test(s) ? s.slice(1) : s) + suffix(e, unit);
  });
}
