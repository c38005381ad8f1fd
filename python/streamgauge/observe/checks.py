"""Assumption checks of the ANOVA: normality per treatment group
(Shapiro-Wilk), equal variances (Levene, Breusch-Pagan), independence of
the residuals in execution order (turning-point test)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from statsmodels.stats.diagnostic import het_breuschpagan

from .anova import Fit


TIE_RTOL = 1e-9


def turning_point_test(x, scale: float | None = None, rtol: float = TIE_RTOL) -> dict:
    """Turning-point test of an i.i.d. sequence (Brockwell & Davis,
    Introduction to Time Series and Forecasting, 2nd ed., 2002, §1.6,
    test (c)). A turning point is an i with x[i-1] < x[i] > x[i+1] or
    x[i-1] > x[i] < x[i+1]. For n i.i.d. values the count T has
    E[T] = 2(n-2)/3 and Var[T] = (16n-29)/90, and is approximately normal:
    too many turning points mean alternation, too few mean trend or
    positive correlation. Two-sided p from the normal approximation.
    No scipy/statsmodels function computes it.

    Ties: the moments hold for continuous values, where neighbours are
    never equal. Values within rtol * scale of their predecessor (scale:
    the response's magnitude, default max |x|) are ties, e.g. residuals
    of runs that all met the set rate, which differ only by the rounding
    of the fit; each run of ties is reduced to one value before counting
    and n is the number of values left, so rounding noise is not counted
    as turning points."""
    x = np.asarray(x, dtype=float)
    scale = float(np.max(np.abs(x))) if scale is None and len(x) else float(scale or 0.0)
    tol = rtol * scale
    kept = []
    for v in x:
        if not kept or abs(v - kept[-1]) > tol:
            kept.append(v)
    ties = len(x) - len(kept)
    x = np.asarray(kept)
    n = len(x)
    if n < 3:
        return {"n": n, "ties": ties, "turning_points": 0, "expected": None, "z": None, "p": None}
    a, b, c = x[:-2], x[1:-1], x[2:]
    t = int(np.sum(((b > a) & (b > c)) | ((b < a) & (b < c))))
    mean = 2.0 * (n - 2) / 3.0
    var = (16.0 * n - 29.0) / 90.0
    z = (t - mean) / math.sqrt(var)
    return {"n": n, "ties": ties, "turning_points": t, "expected": mean, "z": z,
            "p": float(2 * stats.norm.sf(abs(z)))}


def run_checks(f: Fit, alpha: float) -> dict:
    frame = f.frame
    cols = [c for c in frame.columns if c.startswith("f")]
    groups = frame.groupby(cols, sort=False, observed=True)["y"]
    shapiro = []
    samples = []
    for key, ys in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{f.names[i]}={k}" for i, k in enumerate(key))
        ys = ys.to_numpy()
        samples.append(ys)
        if len(ys) >= 3 and np.ptp(ys) > 0:
            w, p = stats.shapiro(ys)
            shapiro.append({"group": label, "n": len(ys), "W": float(w), "p": float(p)})
        else:
            shapiro.append({"group": label, "n": len(ys), "W": None, "p": None})
    resid = np.asarray(f.model.resid)
    # Bonferroni over the groups: one small group out of many is expected
    # to fall below alpha by chance.
    tested = [s for s in shapiro if s["p"] is not None]
    normal_rejected = any(s["p"] < alpha / max(len(tested), 1) for s in tested)
    if len(resid) >= 3 and np.ptp(resid) > 0:
        w, p = stats.shapiro(resid)
        resid_shapiro = {"W": float(w), "p": float(p)}
        normal_rejected = normal_rejected or p < alpha
    else:
        resid_shapiro = {"W": None, "p": None}
    # Levene centred on the median (Brown-Forsythe): robust to the
    # non-normality this check runs alongside.
    lev = stats.levene(*samples, center="median") if all(len(s) > 1 for s in samples) else None
    lm, lm_p, fval, f_p = het_breuschpagan(resid, f.model.model.exog)
    order = np.argsort(frame["order"].to_numpy(), kind="stable")
    return {
        "alpha": alpha,
        "shapiro_groups": shapiro,
        "shapiro_residuals": resid_shapiro,
        "normality_rejected": bool(normal_rejected),
        "levene": {"W": _f(lev.statistic), "p": _f(lev.pvalue)} if lev is not None else None,
        "breusch_pagan": {"LM": float(lm), "p": _f(lm_p)},
        "variances_rejected": bool(lev is not None and _f(lev.pvalue) is not None and lev.pvalue < alpha),
        "turning_point": turning_point_test(resid[order], scale=float(np.max(np.abs(frame["y"])))),
    }


def _f(v) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v
