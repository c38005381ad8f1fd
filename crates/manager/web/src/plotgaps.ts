// Where a plot's lines break: uPlot draws across `undefined` (no row of
// this series at that time) and cuts only across consecutive `null`s.

/**
 * A gap of one sender spans from its last value before to its first
 * after: the other senders' rows in between (undefined in this column)
 * become null too, since uPlot cuts a line only across consecutive nulls.
 */
export function widenGaps(col: (number | null | undefined)[]): void {
  let lastReal = -1;
  let open = false;
  for (let i = 0; i < col.length; i++) {
    const v = col[i];
    if (v === null) {
      if (!open) for (let j = lastReal + 1; j < i; j++) col[j] = null;
      open = true;
    } else if (v === undefined) {
      if (open) col[i] = null;
    } else {
      lastReal = i;
      open = false;
    }
  }
}
