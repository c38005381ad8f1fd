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

Strata. Freedman-Lane assumes the errors are exchangeable; in our
experiments the within-cell standard deviation grows with the operating
point (e.g. it is tiny below the sender's maximum and 10-20 % of the mean
at it), so residuals of different rates are not exchangeable and
permuting them across rates mixes small and large errors, which makes the
test too liberal for the terms the large-variance stratum dominates.
The residuals are therefore permuted only *within strata*, the level
combinations of the `strata` factors (restricted permutation, Anderson &
ter Braak 2003, §2.3); by default every factor other than the treatment.
A term made only of strata factors cannot be tested that way (permuting
inside its own groups leaves it unchanged), so for such a term its own
factors are dropped from the strata (for the main effect of rate, the
residuals are permuted across rates). Each row records the strata used.
The size of the test under the null with standard deviations differing
100-fold between strata is simulated in tests/test_observe_permutation.py.
"""

from __future__ import annotations

import re

import numpy as np

from .anova import Fit, term_label

CHUNK = 2000


def _proj(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Hat matrix and rank of a design matrix (pinv: rank-deficient safe)."""
    return x @ np.linalg.pinv(x), int(np.linalg.matrix_rank(x))


def strata_codes(f: Fit, strata: list[str]) -> np.ndarray:
    """An integer per observation: its level combination of the strata factors."""
    if not strata:
        return np.zeros(len(f.frame), dtype=np.int64)
    cols = [f"f{f.names.index(s)}" for s in strata]
    return f.frame.groupby(cols, sort=True, observed=True).ngroup().to_numpy(dtype=np.int64)


def _permutations(rng, codes: np.ndarray, b: int) -> np.ndarray:
    """b index arrays, each a permutation that maps every stratum onto itself."""
    n = len(codes)
    if codes.max(initial=0) == 0:
        return rng.permuted(np.tile(np.arange(n), (b, 1)), axis=1)
    base = np.argsort(codes, kind="stable")  # positions grouped by stratum
    order = np.argsort(rng.random((b, n)) + 2.0 * codes[None, :], axis=1)  # same grouping, shuffled inside
    idx = np.empty_like(order)
    idx[:, base] = order
    return idx


def permutation_anova(f: Fit, permutations: int = 9999, seed: int = 0, strata: list[str] | None = None,
                      only: list[str] | None = None, y: np.ndarray | None = None) -> list[dict]:
    """strata: factor names whose level combinations bound the
    permutations (None or []: unrestricted). only: term labels to test
    (default: every term). y: another response over the same runs and
    design (simulations reuse one fit); default: the fitted response."""
    strata = list(strata or [])
    for s in strata:
        if s not in f.names:
            raise ValueError(f"stratum factor {s!r} is not a factor of the model ({', '.join(f.names)})")
    model = f.model.model
    x = np.asarray(model.exog, dtype=float)
    y = np.asarray(model.endog if y is None else y, dtype=float)
    n = len(y)
    slices = term_columns(model.exog_names)
    h, rank = _proj(x)
    df_res = n - rank
    rng = np.random.default_rng(seed)
    out = []
    for name, sl in slices.items():
        if name == "Intercept":
            continue
        label = term_label(name, f.names)
        if only is not None and label not in only:
            continue
        parts = label.split(":")
        used = [s for s in strata if s not in parts] if set(parts) <= set(strata) else strata
        codes = strata_codes(f, used)
        keep = np.ones(x.shape[1], dtype=bool)
        keep[sl] = False
        hr, rank_r = _proj(x[:, keep])
        df_t = rank - rank_r
        if df_t == 0 or df_res == 0:
            out.append({"term": label, "df": df_t, "F": None, "p": None, "permutations": 0, "strata": used})
            continue
        e_r = y - hr @ y
        f_obs = _partial_f(h, hr, e_r[:, None], df_t, df_res)[0]
        exceed = 0
        done = 0
        while done < permutations:
            b = min(CHUNK, permutations - done)
            idx = _permutations(rng, codes, b)
            fs = _partial_f(h, hr, e_r[idx].T, df_t, df_res)
            # Relative tolerance: identical F values computed in another
            # order must count as "at least as large".
            exceed += int(np.sum(fs >= f_obs * (1 - 1e-9)))
            done += b
        out.append(
            {
                "term": label,
                "df": df_t,
                "F": float(f_obs),
                "p": (exceed + 1) / (permutations + 1),
                "permutations": permutations,
                "strata": used,
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
