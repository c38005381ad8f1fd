"""Allocation of variation, the turning-point test with ties, and the
multiplicity adjustment of the verdict.

Published results reproduced:
- Jain, The Art of Computer Systems Performance Analysis (1991),
  Example 18.1 (memory-cache study, a 2^2 design with 3 replications):
  SST = 7032, SSA = 5547, SSB = 1083, SSAB = 300, SSE = 102, i.e. 78.88 %
  of the variation explained by the memory, 15.40 % by the cache, 4.27 %
  by their interaction, 1.45 % unexplained.
- Holm (1979)'s step-down adjustment, against a hand computation and
  statsmodels' multipletests (Benjamini-Hochberg too).
Unbalanced designs: type II sums of squares computed here equal
statsmodels' anova_lm(typ=2) and do not depend on the order of the factors.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests

from streamgauge.observe import anova, bootstrap, checks, variation
from streamgauge.observe.verdict import adjust, adjusted, verdict

from test_observe_stats import battery, by_term

JAIN_18_1 = {("-1", "-1"): [15, 18, 12], ("1", "-1"): [45, 48, 51], ("-1", "1"): [25, 28, 19], ("1", "1"): [75, 75, 81]}


def test_allocation_of_variation_matches_jain_example_18_1():
    df = pd.DataFrame([{"memory": a, "cache": b, "value": float(v)} for (a, b), vs in JAIN_18_1.items() for v in vs])
    df["order"] = range(len(df))
    rows = by_term(variation.allocation(anova.fit(df, ["memory", "cache"])))
    assert [round(rows[t]["sum_sq"], 6) for t in ("memory", "cache", "memory:cache", "Residual")] == [5547, 1083, 300, 102]
    assert [round(rows[t]["percent"], 2) for t in ("memory", "cache", "memory:cache", "Residual")] == [78.88, 15.40, 4.27, 1.45]
    assert all(r["type"] == 1 for r in rows.values())


def unbalanced() -> pd.DataFrame:
    df = battery()
    return df.drop(index=[0, 1, 5, 17, 30]).reset_index(drop=True)  # 5 lost runs in 4 cells


def test_unbalanced_allocation_uses_type_ii_sums_as_statsmodels_computes_them():
    f = anova.fit(unbalanced(), ["material", "temperature"])
    assert not variation.balanced(f)
    ours = variation.type2_sums(f)
    ref = anova_lm(f.model, typ=2)
    labels = {anova.term_label(str(t), f.names): float(r["sum_sq"]) for t, r in ref.iterrows() if t != "Residual"}
    assert set(ours) == set(labels)
    for k, v in labels.items():
        assert ours[k] == pytest.approx(v, rel=1e-9)
    rows = by_term(variation.allocation(f))
    assert rows["Residual"]["sum_sq"] == pytest.approx(float(ref.loc["Residual", "sum_sq"]))
    y = f.frame["y"]
    assert sum(r["sum_sq"] for r in rows.values()) == pytest.approx(float(((y - y.mean()) ** 2).sum()))
    assert abs(sum(r["percent"] for r in rows.values()) - 100) < 1e-9
    assert rows[variation.SHARED]["sum_sq"] != pytest.approx(0, abs=1)  # unbalanced: terms are correlated


def test_unbalanced_allocation_does_not_depend_on_the_factor_order():
    df = unbalanced()
    a = by_term(variation.allocation(anova.fit(df, ["material", "temperature"])))
    b = by_term(variation.allocation(anova.fit(df, ["temperature", "material"])))
    assert a["material"]["sum_sq"] == pytest.approx(b["material"]["sum_sq"])
    assert a["temperature"]["sum_sq"] == pytest.approx(b["temperature"]["sum_sq"])
    # whereas the sequential sums (the old allocation) do
    t1 = anova_lm(anova.fit(df, ["material", "temperature"]).model, typ=1)
    t2 = anova_lm(anova.fit(df, ["temperature", "material"]).model, typ=1)
    assert t1["sum_sq"].iloc[0] != pytest.approx(t2["sum_sq"].iloc[1], rel=1e-3)


def test_turning_points_exclude_ties_within_a_relative_tolerance():
    # Runs that all met the set rate: residuals are rounding noise of the
    # fit, 1e-10 of the response. Counted as values they alternate and the
    # old test saw "too many turning points"; as ties they are one value.
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 1e-4, 40)  # 1e-10 of a 1e6 packets/s response
    old = checks.turning_point_test(noise, scale=0.0)
    assert old["turning_points"] > 15 and old["ties"] == 0
    r = checks.turning_point_test(noise, scale=1e6)
    assert r["ties"] == 39 and r["n"] == 1 and r["p"] is None
    # ties inside a sequence: [1, 2, 2+, 2, 1, 3] -> [1, 2, 1, 3]: 2 turning points of n = 4
    r = checks.turning_point_test([1.0, 2.0, 2.0 + 1e-12, 2.0, 1.0, 3.0])
    assert (r["n"], r["ties"], r["turning_points"]) == (4, 2, 2)
    assert r["expected"] == pytest.approx(4 / 3)
    # distinct values are never ties
    assert checks.turning_point_test(np.arange(10.0))["ties"] == 0


def test_holm_adjustment_by_hand():
    effects = [{"p": 0.01}, {"p": 0.04}, {"p": 0.03}, {"p": 0.005}, {"p": None}]
    assert adjust(effects) == 4
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.02, 0.03, 0.06, 0.06
    assert [e["p_adj"] for e in effects[:4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert effects[4]["p_adj"] is None
    bh = [{"p": p} for p in (0.01, 0.04, 0.03, 0.005)]
    adjust(bh, "fdr_bh")
    assert [e["p_adj"] for e in bh] == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with pytest.raises(ValueError, match="unknown adjustment"):
        adjust(bh, "bonferonni")
    # and against statsmodels' implementation, with ties and p near 1
    rng = np.random.default_rng(2)
    for m in (1, 2, 6, 30):
        p = np.round(rng.uniform(0, 1, m) ** 3, 3)
        for method in ("holm", "fdr_bh"):
            assert adjusted(p, method) == pytest.approx(multipletests(p, method=method)[1], abs=1e-12)


def test_the_verdict_names_only_cells_significant_after_holm():
    tests = [{"term": "flavour", "p": 0.001}]
    effects = [
        {"level": "pp", "at": {"rate": "a"}, "estimate": -0.2, "ci_low": -0.3, "ci_high": -0.1, "p": 0.001},
        {"level": "pp", "at": {"rate": "b"}, "estimate": -0.1, "ci_low": -0.19, "ci_high": -0.01, "p": 0.03},
        {"level": "pp", "at": {"rate": "c"}, "estimate": 0.01, "ci_low": -0.1, "ci_high": 0.1, "p": 0.8},
    ]
    adjust(effects)
    v = verdict("recv_pps", "flavour", tests, effects, 0.05, "ANOVA F-test")
    assert "at rate a" in v and "at rate b" not in v  # 0.03 x 2 = 0.06 after Holm
    assert "Holm-adjusted over 3 cells" in v


def test_familywise_error_of_the_per_cell_verdicts_under_the_null():
    # 6 cells, 5 runs each, no effect anywhere; 400 simulated responses.
    # Unadjusted, some cell is "significant" in up to 1 - 0.95^6 = 26 % of
    # them (21.5 % with this seed: Welch's test is a little conservative at
    # n = 5); after Holm in at most about 5 % (3.3 %).
    rng = np.random.default_rng(12)
    any_raw = any_holm = 0
    for _ in range(400):
        effects = [{"p": bootstrap.welch_p(rng.normal(100, 10, 5), rng.normal(100, 10, 5))} for _ in range(6)]
        adjust(effects)
        any_raw += any(e["p"] < 0.05 for e in effects)
        any_holm += any(e["p_adj"] < 0.05 for e in effects)
    assert any_raw / 400 > 0.18
    assert any_holm / 400 <= 0.075
    assert stats.binomtest(any_holm, 400, 0.05, alternative="greater").pvalue > 0.01
