"""Permutation ANOVA, used when the residuals are not normal.

Method: Freedman & Lane (1983), "A nonstochastic interpretation of
reported significance levels", J. Bus. Econ. Stat. 1(4) 292-298; the
choice among permutation schemes for factorial designs follows Anderson &
ter Braak (2003), J. Stat. Comput. Simul. 73(2) 85-113. For each term the
*residuals of the reduced model* (the full model without that term) are
permuted and added back to the reduced model's fitted values; the term's
partial F (the type III F with sum-to-zero contrasts) is recomputed on
each permuted response. Permuting the raw responses instead would test
the joint null "no factor has any effect", which is not the question for
one term of a model whose other terms do have effects.

p = (1 + #{F* >= F_obs}) / (B + 1), B permutations drawn from a seeded
numpy Generator (so a result is reproducible from its seed). statsmodels
and scipy have no permutation test for a term of a linear model
(scipy.stats.permutation_test permutes whole samples), hence this loop;
the F statistics themselves come from least-squares projections.
"""

from __future__ import annotations

import re

import numpy as np

from .anova import Fit, term_label

CHUNK = 2000


def _proj(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Hat matrix and rank of a design matrix (pinv: rank-deficient safe)."""
    return x @ np.linalg.pinv(x), int(np.linalg.matrix_rank(x))


def permutation_anova(f: Fit, permutations: int = 9999, seed: int = 0) -> list[dict]:
    model = f.model.model
    x = np.asarray(model.exog, dtype=float)
    y = np.asarray(model.endog, dtype=float)
    n = len(y)
    slices = term_columns(model.exog_names)
    h, rank = _proj(x)
    df_res = n - rank
    rng = np.random.default_rng(seed)
    out = []
    for name, sl in slices.items():
        if name == "Intercept":
            continue
        keep = np.ones(x.shape[1], dtype=bool)
        keep[sl] = False
        hr, rank_r = _proj(x[:, keep])
        df_t = rank - rank_r
        if df_t == 0 or df_res == 0:
            out.append({"term": term_label(name, f.names), "df": df_t, "F": None, "p": None, "permutations": 0})
            continue
        e_r = y - hr @ y
        f_obs = _partial_f(h, hr, e_r[:, None], df_t, df_res)[0]
        exceed = 0
        done = 0
        while done < permutations:
            b = min(CHUNK, permutations - done)
            idx = rng.permuted(np.tile(np.arange(n), (b, 1)), axis=1)
            fs = _partial_f(h, hr, e_r[idx].T, df_t, df_res)
            # Relative tolerance: identical F values computed in another
            # order must count as "at least as large".
            exceed += int(np.sum(fs >= f_obs * (1 - 1e-9)))
            done += b
        out.append(
            {
                "term": term_label(name, f.names),
                "df": df_t,
                "F": float(f_obs),
                "p": (exceed + 1) / (permutations + 1),
                "permutations": permutations,
            }
        )
    return out


def term_columns(names: list[str]) -> dict[str, list[int]]:
    """Design-matrix columns of each term, from the column names
    ('C(f0, Sum)[S.1]:C(f1, Sum)[S.15]' belongs to 'C(f0, Sum):C(f1, Sum)'):
    works with both formula backends of statsmodels (patsy, formulaic)."""
    out: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        out.setdefault(re.sub(r"\[[^\]]*\]", "", n), []).append(i)
    return out


def _partial_f(h, hr, e, df_t, df_res) -> np.ndarray:
    """Partial F of the term for each column of e (the permuted reduced
    residuals; the reduced fit lies in both column spaces, so it cancels)."""
    rss_full = np.sum((e - h @ e) ** 2, axis=0)
    rss_red = np.sum((e - hr @ e) ** 2, axis=0)
    return ((rss_red - rss_full) / df_t) / (rss_full / df_res)
