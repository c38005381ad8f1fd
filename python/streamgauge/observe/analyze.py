"""The whole analysis of one runs file, as a JSON-serialisable dict."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import anova, bootstrap, checks, permutation, posthoc, variation
from .data import load_runs
from .verdict import HOLM, METHODS, verdict
from .verdict import adjust as adjust_p


def analyze(runs_csv: str | Path, treatment: str | None = None, baseline: str | None = None, alpha: float = 0.05,
            permutations: int = 9999, resamples: int = 9999, seed: int = 1, strata: list[str] | None = None,
            adjust: str = HOLM) -> dict:
    """strata: factors within whose level combinations the permutation
    ANOVA permutes (None: every factor but the treatment; []: none).
    adjust: multiplicity adjustment of the per-cell verdicts ('holm' or
    'fdr_bh')."""
    design, long = load_runs(runs_csv, treatment, baseline)
    factors = list(design.factors)
    strata = design.blocks if strata is None else list(strata)
    for s in strata:
        if s not in factors:
            raise ValueError(f"--strata: {s!r} is not a factor of the runs file (factors: {', '.join(factors)})")
    if adjust not in METHODS:
        raise ValueError(f"--adjust: {adjust!r} is not one of {', '.join(METHODS)}")
    out = {"source": str(runs_csv), "design": design.to_json(), "alpha": alpha, "seed": seed, "strata": strata,
           "adjust": adjust, "bca_min_n": bootstrap.BCA_MIN_N, "responses": []}
    for ri, response in enumerate(design.responses):
        df = long[long["response"] == response].reset_index(drop=True)
        out["responses"].append(
            _one(df, response, design, factors, alpha, permutations, resamples, seed + 7919 * ri, strata, adjust)
        )
    return out


def _one(df, response, design, factors, alpha, permutations, resamples, seed, strata, adjust) -> dict:
    cells = df.groupby(factors, observed=True)["value"]
    means = [
        {**dict(zip(factors, k if isinstance(k, tuple) else (k,))), "n": int(len(v)), "mean": float(v.mean()),
         "sd": float(v.std(ddof=1)) if len(v) > 1 else None}
        for k, v in cells
    ]
    r = {"response": response, "n": int(len(df)), "cells": means,
         "values": df[[*factors, "order", "value"]].astype({f: str for f in factors}).to_dict("records")}
    if len(means) < int(np.prod([len(v) for v in design.factors.values()])) or min(m["n"] for m in means) < 2:
        r["error"] = "every treatment needs at least 2 successful runs for the ANOVA"
        r["verdict"] = f"{response}: not analysed ({r['error']})."
        return r
    if all(m["sd"] == 0 for m in means):
        # Every run of every treatment measured the same value (a loss of 0
        # at a rate the path carries): the residual variance is zero, F and
        # every interval are undefined, and there is no effect to find.
        # Not an error: the plan ran, and the answer is in the means.
        same = len({m["mean"] for m in means}) == 1
        r["skipped"] = ("the response has the same value in every run" if same else
                        "the response does not vary within any treatment (zero residual variance)")
        r["verdict"] = f"{response}: no test ({r['skipped']}); the cell means are listed."
        return r
    f = anova.fit(df, factors)
    r["formula"] = f"{response} ~ " + " * ".join(factors)
    r["anova_type2"] = anova.table(f, 2)
    r["anova_type3"] = anova.table(f, 3)
    r["checks"] = checks.run_checks(f, alpha)
    r["residuals"] = {"fitted": [float(v) for v in f.model.fittedvalues],
                      "resid": [float(v) for v in f.model.resid],
                      "order": [int(v) for v in f.frame["order"]]}
    c = r["checks"]
    if c["normality_rejected"] or c["variances_rejected"]:
        r["permutation"] = permutation.permutation_anova(f, permutations, seed, strata=strata)
        chosen, name = r["permutation"], "permutation ANOVA"
    else:
        chosen = [t for t in r["anova_type3"] if t["term"] != "Residual"]
        name = "ANOVA F-test"
    r["test_used"] = name
    procedure, why = posthoc.choose(c, alpha)
    mse, df_res = float(f.model.mse_resid), float(f.model.df_resid)
    r["posthoc"] = {"procedure": procedure, "reason": why, "mse": mse, "df_resid": df_res}
    r["tukey"] = posthoc.for_significant(df, chosen, alpha, factors, design.treatment, procedure, mse, df_res)
    r["variation"] = variation.allocation(f)
    r["variation_type"] = r["variation"][0]["type"]
    r["effects"] = bootstrap.effects(df, design.treatment, design.baseline, design.blocks, design.factors,
                                     1 - alpha, resamples, seed)
    r["cells_tested"] = adjust_p(r["effects"], adjust)
    r["verdict"] = verdict(response, design.treatment, chosen, r["effects"], alpha, name, adjust)
    return r


def write(result: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(result, indent=1, allow_nan=False, default=_default) + "\n")


def _default(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    raise TypeError(f"not JSON serialisable: {type(v)}")
