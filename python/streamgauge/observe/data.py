"""Load a runs file into one row per run x response, factors categorical."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .design import FACTOR, RESPONSE, Design, from_runs


def load_runs(path: str | Path, treatment: str | None = None, baseline: str | None = None) -> tuple[Design, pd.DataFrame]:
    """The design and the long table (columns: run, order, <factors>,
    response, value) of the successful runs. Failed runs are kept in
    design.failed (with their error) so the report lists them."""
    runs = pd.read_csv(path, dtype=str, keep_default_na=False)
    design = from_runs(runs, treatment, baseline)
    status = runs["status"] if "status" in runs.columns else pd.Series("ok", index=runs.index)
    bad = runs[status != "ok"]
    design.failed = [
        {
            "run": int(r.get("run", -1) or -1),
            **{f: r[FACTOR + f] for f in design.factors},
            "error": r.get("error", ""),
        }
        for _, r in bad.iterrows()
    ]
    good = runs[status == "ok"].copy()
    for c in ("run", "order"):
        if c in good.columns:
            good[c] = good[c].astype(int)
        else:
            good[c] = range(len(good))
    good = good.rename(columns={FACTOR + f: f for f in design.factors})
    long = good.melt(
        id_vars=["run", "order", *design.factors],
        value_vars=[RESPONSE + r for r in design.responses],
        var_name="response",
        value_name="value",
    )
    long["response"] = long["response"].str[len(RESPONSE):]
    long["value"] = pd.to_numeric(long["value"], errors="coerce")
    missing = long[long["value"].isna()]
    if len(missing):
        first = missing.iloc[0]
        raise ValueError(f"run {first['run']}: response {first['response']} is not a number; a successful run needs every response")
    for f, levels in design.factors.items():
        long[f] = pd.Categorical(long[f].astype(str), categories=levels)
    return design, long.sort_values(["response", "order"]).reset_index(drop=True)
