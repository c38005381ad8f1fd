// Runs on one grid of time since their start, for the comparison of runs
// (compareplot.ts): each run's mean per interval, and where every run has
// a value their mean, lowest and highest.

/** Grid intervals over the longest run (fewer when rows are sparser). */
const GRID = 100;

/** The interval of the common grid: 1/GRID of the span, and at least two
 * typical row periods, so that an empty interval is a silence. */
export function gridWidth(runs: { xs: number[] }[], span: number): number {
  let period = 0;
  for (const r of runs) {
    const d = r.xs.slice(1).map((x, i) => x - r.xs[i]!).filter((v) => v > 0).sort((a, b) => a - b);
    if (d.length) period = Math.max(period, d[Math.floor(d.length / 2)]!);
  }
  return Math.max(span / GRID, 2 * period) || 1;
}

/**
 * Each run on a grid of intervals `w` wide over [0, span] (the mean of
 * its points in each; null where it has none), and where every run has a
 * value, their mean, lowest and highest.
 */
export function onGrid(runs: { xs: number[]; ys: (number | null)[] }[], span: number, w: number): { x: number[]; runs: (number | null)[][]; mean: (number | null)[]; lo: (number | null)[]; hi: (number | null)[] } {
  const n = Math.max(1, Math.ceil(span / w));
  const per = runs.map((r) => {
    const sum = new Array<number>(n).fill(0);
    const cnt = new Array<number>(n).fill(0);
    r.xs.forEach((x, i) => {
      const y = r.ys[i];
      if (y === null || y === undefined || x < 0 || x > span) return;
      const b = Math.min(n - 1, Math.floor(x / w));
      sum[b]! += y;
      cnt[b]!++;
    });
    return sum.map((s, b) => (cnt[b] ? s / cnt[b]! : null));
  });
  const x: number[] = [];
  const mean: (number | null)[] = [];
  const lo: (number | null)[] = [];
  const hi: (number | null)[] = [];
  for (let b = 0; b < n; b++) {
    const vals = per.map((p) => p[b]).filter((v): v is number => v !== null && v !== undefined);
    x.push((b + 0.5) * w);
    // A point of the band needs every run, or it would narrow where one is silent.
    const all = vals.length === runs.length && vals.length > 0;
    mean.push(all ? vals.reduce((a, v) => a + v, 0) / vals.length : null);
    lo.push(all ? Math.min(...vals) : null);
    hi.push(all ? Math.max(...vals) : null);
  }
  return { x, runs: per, mean, lo, hi };
}
