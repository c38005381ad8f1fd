"""Allocation of variation (Jain, The Art of Computer Systems Performance
Analysis, 1991, §18.4 and §20.5): the share of the total sum of squares
SST = sum (y - mean)^2 explained by each factor, each interaction and the
residual (experimental error).

Balanced design (every cell has the same number of runs): the terms are
orthogonal, the sequential (type I) sums of squares equal Jain's SSA,
SSB, SSAB, SSE and add up to SST exactly, whatever the order of the terms.

Unbalanced design (a failed run is enough): the terms are correlated and
type I sums of squares depend on the order the factors are listed in.
Each term then gets its type II sum of squares (Langsrud 2003, Stat.
Comput. 13, 163-167): the reduction in residual sum of squares when the
term is added to the model of all terms that do not contain it. That does
not depend on the order, but the shares no longer add up to SST; the
remainder is reported as its own row (variation that cannot be assigned
to one term because the terms are correlated).

The type II sums are computed here from least-squares projections, so the
test suite can check them against statsmodels' anova_lm(typ=2).
"""

from __future__ import annotations

import numpy as np
from statsmodels.stats.anova import anova_lm

from .anova import Fit, term_label
from .permutation import term_columns

SHARED = "shared (unbalanced design)"


def balanced(f: Fit) -> bool:
    cols = [c for c in f.frame.columns if c.startswith("f")]
    counts = f.frame.groupby(cols, observed=True).size()
    return counts.nunique() == 1


def _rss(x: np.ndarray, y: np.ndarray) -> float:
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    r = y - x @ beta
    return float(r @ r)


def type2_sums(f: Fit) -> dict[str, float]:
    """Type II sum of squares of every term, by label."""
    model = f.model.model
    x = np.asarray(model.exog, dtype=float)
    y = np.asarray(model.endog, dtype=float)
    cols = term_columns(model.exog_names)
    factors_of = {name: set(term_label(name, f.names).split(":")) for name in cols if name != "Intercept"}
    out = {}
    for name, fs in factors_of.items():
        # the model of every term that does not contain this one (and the intercept)
        base = [i for other, ofs in factors_of.items() if not fs <= ofs for i in cols[other]] + cols["Intercept"]
        with_term = sorted(base + cols[name])
        out[term_label(name, f.names)] = _rss(x[:, sorted(base)], y) - _rss(x[:, with_term], y)
    return out


def allocation(f: Fit) -> list[dict]:
    y = f.frame["y"]
    sst = float(((y - y.mean()) ** 2).sum())
    pct = (lambda ss: 100.0 * ss / sst if sst > 0 else 0.0)
    if balanced(f):
        t = anova_lm(f.model, typ=1)
        return [{"term": term_label(str(term), f.names), "sum_sq": float(r["sum_sq"]),
                 "percent": pct(float(r["sum_sq"])), "type": 1} for term, r in t.iterrows()]
    rows = [{"term": k, "sum_sq": v, "percent": pct(v), "type": 2} for k, v in type2_sums(f).items()]
    sse = float(f.model.ssr)
    rows.append({"term": "Residual", "sum_sq": sse, "percent": pct(sse), "type": 2})
    shared = sst - sum(r["sum_sq"] for r in rows)
    rows.append({"term": SHARED, "sum_sq": shared, "percent": pct(shared), "type": 2})
    return rows
