"""Pairwise comparisons after the factorial ANOVA: Tukey HSD with the
full model's error term, or Games-Howell when equal variances are rejected.

Tukey HSD (Montgomery, Design and Analysis of Experiments, 8th ed., 2013,
§3.5.7 and §5.3.2): the standard error of a difference comes from the
*factorial* model's mean squared error MS_E and its residual degrees of
freedom, not from a one-way model over the compared groups (whose error
term would include the variation of every other factor). With unequal
group sizes it is the Tukey-Kramer form: q = |d| / sqrt(Var(d) / 2),
p = P(Q(k, df_E) >= q), Q the studentised range of k means.

Games-Howell (Games & Howell 1976, J. Educ. Stat. 1(2) 113-125): each
pair gets its own Welch standard error and Welch-Satterthwaite degrees of
freedom; the same studentised-range reference. It does not assume equal
variances, so it is the procedure when Levene's test rejects them.

What is compared: the means of a term's groups. A main effect compares
its levels; an interaction that involves the treatment compares the
treatment's levels within each combination of the term's other factors
(simple effects, Montgomery §5.3.2: one family of k = #treatment levels
per combination); an interaction without the treatment compares all its
cells. A group's mean is the unweighted mean of its cell means (the
least-squares mean of the full factorial model), so an unbalanced design
does not weight a level by how many runs happened to succeed; in a
balanced design it is the plain group mean.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats

TUKEY = "Tukey HSD"
GAMES_HOWELL = "Games-Howell"


def cell_stats(df: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """n, mean and variance of every cell (combination of all factors), in
    level order (the plan's order for the categorical factors of a runs
    file), levels as text."""
    g = df.groupby(factors, observed=True, sort=True)["value"]
    out = g.agg(n="count", mean="mean", var=lambda v: v.var(ddof=1) if len(v) > 1 else np.nan).reset_index()
    return out.astype({f: str for f in factors})


def _groups(cells: pd.DataFrame, term: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """The term's groups in level order of appearance, each with its cells."""
    out = []
    for key, sub in cells.groupby(term, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append((", ".join(f"{f}={k}" for f, k in zip(term, key)), sub))
    return out


def compare(df: pd.DataFrame, factors: list[str], term: list[str], alpha: float, procedure: str,
            mse: float | None = None, df_res: float | None = None, within: dict | None = None) -> list[dict]:
    """All pairwise comparisons of the groups of `term` (a list of factor
    names), among the cells matching `within` ({factor: level}) if given.
    Tukey needs the factorial model's `mse` and `df_res`."""
    cells = cell_stats(df, factors)
    if within:
        for f, v in within.items():
            cells = cells[cells[f] == str(v)]
    groups = _groups(cells, term)
    k = len(groups)
    if k < 2:
        return []
    if procedure == TUKEY and (mse is None or df_res is None or df_res <= 0):
        raise ValueError("Tukey HSD needs the factorial model's MS_E and residual degrees of freedom")
    summary = []
    for label, sub in groups:
        w = 1.0 / len(sub)
        n = sub["n"].to_numpy(dtype=float)
        var = sub["var"].to_numpy(dtype=float)
        summary.append({
            "label": label,
            "mean": float(sub["mean"].mean()),  # unweighted mean of cell means
            "c": float(np.sum(w * w / n)),  # Var(mean) = sigma^2 * c under equal variances
            "v": w * w * var / n,  # per-cell contributions to Var(mean), Welch
            "dof": n - 1,
        })
    rows = []
    for a, b in itertools.combinations(range(k), 2):
        ga, gb = summary[a], summary[b]
        d = gb["mean"] - ga["mean"]  # group2 - group1, as statsmodels reports it
        if procedure == TUKEY:
            se2 = mse * (ga["c"] + gb["c"])
            dof = float(df_res)
        else:
            parts = np.concatenate([ga["v"], gb["v"]])
            dofs = np.concatenate([ga["dof"], gb["dof"]])
            se2 = float(np.sum(parts))
            denom = float(np.sum(parts ** 2 / dofs))
            dof = se2 ** 2 / denom if denom > 0 else float("nan")
        row = {"group1": ga["label"], "group2": gb["label"], "meandiff": float(d), "se": None, "df": None,
               "p_adj": None, "lower": None, "upper": None, "reject": False}
        if se2 > 0 and math.isfinite(dof) and dof > 0:
            se = math.sqrt(se2 / 2.0)  # the studentised range is in units of sqrt(Var(d) / 2)
            qcrit = float(stats.studentized_range.ppf(1 - alpha, k, dof))
            p = float(stats.studentized_range.sf(abs(d) / se, k, dof))
            row.update(se=math.sqrt(se2), df=dof, p_adj=min(1.0, p), lower=d - qcrit * se, upper=d + qcrit * se,
                       reject=bool(p < alpha))
        rows.append(row)
    return rows


def choose(checks: dict, alpha: float) -> tuple[str, str]:
    """The procedure and why: Games-Howell when Levene (median-centred)
    rejects equal variances, else Tukey HSD with the factorial MS_E."""
    lev = checks.get("levene")
    if lev and lev.get("p") is not None and lev["p"] < alpha:
        return GAMES_HOWELL, (f"Levene's test rejects equal variances (p = {lev['p']:.4g} < {alpha}), so each pair "
                              "gets its own Welch standard error and degrees of freedom")
    why = f"Levene's test does not reject equal variances (p = {lev['p']:.4g})" if lev and lev.get("p") is not None \
        else "equal variances could not be tested"
    return TUKEY, f"{why}, so the error term is the factorial model's MS_E with its residual degrees of freedom"


def for_significant(df: pd.DataFrame, tests: list[dict], alpha: float, factors: list[str], treatment: str,
                    procedure: str, mse: float | None, df_res: float | None) -> list[dict]:
    """Comparison tables for the terms whose p (from the chosen test) is below alpha."""
    out = []
    for t in tests:
        if t["term"] == "Residual" or t.get("p") is None or t["p"] >= alpha:
            continue
        term = t["term"].split(":")
        comparisons = []
        if len(term) > 1 and treatment in term:
            others = [f for f in term if f != treatment]
            levels = cell_stats(df, factors)[others].drop_duplicates()
            for _, lv in levels.iterrows():
                at = {f: lv[f] for f in others}
                comparisons += compare(df, factors, [*others, treatment], alpha, procedure, mse, df_res, within=at)
        else:
            comparisons = compare(df, factors, term, alpha, procedure, mse, df_res)
        out.append({"term": t["term"], "procedure": procedure, "comparisons": comparisons})
    return out
