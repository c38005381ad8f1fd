"""Allocation of variation (Jain, The Art of Computer Systems Performance
Analysis, 1991, §18.4 and §20.5): the share of the total sum of squares
SST = sum (y - mean)^2 explained by each factor, each interaction and the
residual (experimental error). Computed from the sequential (type I) sums
of squares of anova_lm, which add up to SST exactly; in a balanced full
factorial design they equal Jain's SSA, SSB, SSAB, SSE."""

from __future__ import annotations

from statsmodels.stats.anova import anova_lm

from .anova import Fit, term_label


def allocation(f: Fit) -> list[dict]:
    t = anova_lm(f.model, typ=1)
    y = f.frame["y"]
    sst = float(((y - y.mean()) ** 2).sum())
    rows = []
    for term, r in t.iterrows():
        ss = float(r["sum_sq"])
        rows.append(
            {
                "term": term_label(str(term), f.names),
                "sum_sq": ss,
                "percent": 100.0 * ss / sst if sst > 0 else 0.0,
            }
        )
    return rows
