"""n-way ANOVA with all interactions (statsmodels OLS + anova_lm).

Factors are coded with sum-to-zero contrasts so that the type III table
tests each term in the presence of the others (with treatment coding a
type III main effect would be the effect at the reference level only).
Type II is reported too; in a balanced design the two agree.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm


@dataclass
class Fit:
    model: object  # statsmodels RegressionResults
    frame: pd.DataFrame  # columns f0..fk, y, order
    names: list[str]  # factor names, index i <-> column f{i}
    formula: str


def safe_frame(df: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """The response frame with factors renamed f0..fk (any factor name works in a formula)."""
    out = pd.DataFrame({f"f{i}": df[f].astype(str).values for i, f in enumerate(factors)})
    out["y"] = df["value"].to_numpy(dtype=float)
    out["order"] = df["order"].to_numpy() if "order" in df else np.arange(len(df))
    return out


def rhs(k: int) -> str:
    return " * ".join(f"C(f{i}, Sum)" for i in range(k))


def fit(df: pd.DataFrame, factors: list[str]) -> Fit:
    frame = safe_frame(df, factors)
    formula = "y ~ " + rhs(len(factors))
    return Fit(smf.ols(formula, data=frame).fit(), frame, list(factors), formula)


def term_label(term: str, names: list[str]) -> str:
    """'C(f0, Sum):C(f1, Sum)' -> 'flavour:rate'."""
    if term == "Residual":
        return term
    parts = []
    for p in term.split(":"):
        idx = int(p[len("C(f"):p.index(",")])
        parts.append(names[idx])
    return ":".join(parts)


def table(f: Fit, typ: int) -> list[dict]:
    """The ANOVA table as rows {term, df, sum_sq, mean_sq, F, p}."""
    t = anova_lm(f.model, typ=typ)
    rows = []
    for term, r in t.iterrows():
        if term == "Intercept":
            continue
        df_ = float(r["df"])
        rows.append(
            {
                "term": term_label(str(term), f.names),
                "df": df_,
                "sum_sq": float(r["sum_sq"]),
                "mean_sq": float(r["sum_sq"]) / df_ if df_ else float("nan"),
                "F": _num(r.get("F")),
                "p": _num(r.get("PR(>F)")),
            }
        )
    return rows


def terms(names: list[str]) -> list[tuple[int, ...]]:
    """Every main effect and interaction, in the order patsy expands a*b*c."""
    k = len(names)
    return [c for n in range(1, k + 1) for c in itertools.combinations(range(k), n)]


def _num(v) -> float | None:
    if v is None:
        return None
    v = float(v)
    return None if np.isnan(v) else v
