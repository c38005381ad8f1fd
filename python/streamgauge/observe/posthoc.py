"""Tukey HSD (statsmodels pairwise_tukeyhsd) for the significant terms.

A main effect compares its levels (averaged over the other factors); an
interaction compares the cells of the factors it joins, labelled
"a=x, b=y". The pooled variance is that of the one-way model over those
groups, as pairwise_tukeyhsd computes it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.multicomp import pairwise_tukeyhsd


def tukey(df: pd.DataFrame, factors: list[str], alpha: float) -> list[dict]:
    """Every pairwise comparison of the groups formed by `factors`."""
    groups = df[factors].astype(str).apply(lambda r: ", ".join(f"{f}={r[f]}" for f in factors), axis=1)
    res = pairwise_tukeyhsd(df["value"].to_numpy(dtype=float), groups.to_numpy(), alpha=alpha)
    names = res.groupsunique
    i, j = np.triu_indices(len(names), 1)
    rows = []
    for k, (a, b) in enumerate(zip(i, j)):
        rows.append(
            {
                "group1": str(names[a]),
                "group2": str(names[b]),
                "meandiff": float(res.meandiffs[k]),
                "p_adj": float(res.pvalues[k]),
                "lower": float(res.confint[k][0]),
                "upper": float(res.confint[k][1]),
                "reject": bool(res.reject[k]),
            }
        )
    return rows


def for_significant(df: pd.DataFrame, tests: list[dict], alpha: float) -> list[dict]:
    """Tukey tables for the terms whose p (from the chosen test) is below alpha."""
    out = []
    for t in tests:
        if t["term"] == "Residual" or t.get("p") is None or t["p"] >= alpha:
            continue
        factors = t["term"].split(":")
        out.append({"term": t["term"], "comparisons": tukey(df, factors, alpha)})
    return out
