"""Effect sizes with bootstrap BCa confidence intervals
(scipy.stats.bootstrap, method='BCa'; Efron 1987, JASA 82(397) 171-185).

The effect of a treatment level is its relative difference to the
baseline level, mean(level) / mean(baseline) - 1, computed within each
combination of the other factors (e.g. per set rate): the two samples are
resampled independently (unpaired), as the runs are.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats


def relative_difference(level, base, axis=-1):
    return np.mean(level, axis=axis) / np.mean(base, axis=axis) - 1.0


def relative_ci(level, base, confidence: float = 0.95, resamples: int = 9999, seed: int = 0) -> dict:
    level = np.asarray(level, dtype=float)
    base = np.asarray(base, dtype=float)
    est = float(relative_difference(level, base))
    lo = hi = None
    note = ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = stats.bootstrap(
                (level, base),
                relative_difference,
                vectorized=True,
                paired=False,
                confidence_level=confidence,
                n_resamples=resamples,
                method="BCa",
                rng=np.random.default_rng(seed),
            )
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        except (ValueError, ZeroDivisionError) as e:
            note = str(e)
    if caught and not note:
        note = "; ".join(sorted({str(w.message) for w in caught}))
    return {
        "estimate": est,
        "ci_low": None if lo is None or np.isnan(lo) else lo,
        "ci_high": None if hi is None or np.isnan(hi) else hi,
        "confidence": confidence,
        "resamples": resamples,
        "note": note,
    }


def effects(df: pd.DataFrame, treatment: str, baseline: str, blocks: list[str], levels: dict[str, list[str]], confidence=0.95, resamples=9999, seed=0) -> list[dict]:
    """One effect per (treatment level != baseline) x (combination of the
    other factors' levels)."""
    out = []
    combos = list(itertools.product(*(levels[b] for b in blocks))) if blocks else [()]
    for ci, combo in enumerate(combos):
        mask = np.ones(len(df), dtype=bool)
        for b, v in zip(blocks, combo):
            mask &= (df[b].astype(str) == v).to_numpy()
        cell = df[mask]
        base = cell.loc[cell[treatment].astype(str) == baseline, "value"].to_numpy(dtype=float)
        for li, lvl in enumerate(levels[treatment]):
            if lvl == baseline:
                continue
            x = cell.loc[cell[treatment].astype(str) == lvl, "value"].to_numpy(dtype=float)
            at = dict(zip(blocks, combo))
            if len(x) < 2 or len(base) < 2 or base.mean() == 0:
                out.append({"level": lvl, "at": at, "estimate": None, "ci_low": None, "ci_high": None,
                            "note": "fewer than 2 runs (or a zero baseline mean) in this cell"})
                continue
            r = relative_ci(x, base, confidence, resamples, seed + 1000 * ci + li)
            out.append({"level": lvl, "at": at, **r})
    return out
