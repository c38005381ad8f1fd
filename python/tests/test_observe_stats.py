"""Validation of the observer-effect statistics (streamgauge.observe).

Published results reproduced to their printed precision:
- two-way ANOVA with interaction: Montgomery, Design and Analysis of
  Experiments (8th ed., 2013), Example 5.1 (battery life: material type x
  temperature, 4 replicates), Table 5.5;
- one-way ANOVA and Tukey HSD: Montgomery Example 3.1 (plasma etch rate vs
  RF power, 5 replicates), Table 3.4 and Example 3.7 (T_0.05 = 33.09, all
  six pairs differ).
Property tests: seeded permutation and bootstrap are reproducible; under
simulated null data the permutation p-values are uniform (KS test); the
interval covers the true relative difference about 95 % of the time (the
coverage and size simulations of the current method are in
test_observe_intervals.py, test_observe_permutation.py and
test_observe_variation.py; post-hoc comparisons in test_observe_posthoc.py).
"""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multicomp import pairwise_tukeyhsd

from streamgauge.observe import anova, bootstrap, checks, permutation, posthoc, variation
from streamgauge.observe.analyze import analyze

BATTERY = {  # material -> temperature (F) -> life (h)
    "1": {"15": [130, 155, 74, 180], "70": [34, 40, 80, 75], "125": [20, 70, 82, 58]},
    "2": {"15": [150, 188, 159, 126], "70": [136, 122, 106, 115], "125": [25, 70, 58, 45]},
    "3": {"15": [138, 110, 168, 160], "70": [174, 120, 150, 139], "125": [96, 104, 82, 60]},
}
ETCH = {"160": [575, 542, 530, 539, 570], "180": [565, 593, 590, 579, 610],
        "200": [600, 651, 610, 637, 629], "220": [725, 700, 715, 685, 710]}


def battery() -> pd.DataFrame:
    rows = [{"material": m, "temperature": t, "value": float(v)}
            for m, ts in BATTERY.items() for t, vs in ts.items() for v in vs]
    df = pd.DataFrame(rows)
    df["order"] = range(len(df))
    return df


def etch() -> pd.DataFrame:
    df = pd.DataFrame([{"power": p, "value": float(v)} for p, vs in ETCH.items() for v in vs])
    df["order"] = range(len(df))
    return df


def by_term(rows):
    return {r["term"]: r for r in rows}


def test_two_way_anova_matches_montgomery_table_5_5():
    f = anova.fit(battery(), ["material", "temperature"])
    for typ in (2, 3):  # balanced: type II and III agree with the book
        t = by_term(anova.table(f, typ))
        assert round(t["material"]["sum_sq"], 2) == 10683.72
        assert round(t["temperature"]["sum_sq"], 2) == 39118.72
        assert round(t["material:temperature"]["sum_sq"], 2) == 9613.78
        assert round(t["Residual"]["sum_sq"], 2) == 18230.75
        assert [t[k]["df"] for k in ("material", "temperature", "material:temperature", "Residual")] == [2, 2, 4, 27]
        assert round(t["Residual"]["mean_sq"], 2) == 675.21
        assert round(t["material"]["F"], 2) == 7.91
        assert round(t["temperature"]["F"], 2) == 28.97
        assert round(t["material:temperature"]["F"], 2) == 3.56
        assert round(t["material"]["p"], 4) == 0.0020
        assert t["temperature"]["p"] < 0.0001
        assert round(t["material:temperature"]["p"], 4) == 0.0186


def test_allocation_of_variation_adds_up_to_the_total():
    f = anova.fit(battery(), ["material", "temperature"])
    a = by_term(variation.allocation(f))
    # SS_T = 77646.97 (Table 5.5); the shares are SS / SS_T.
    assert round(sum(r["sum_sq"] for r in a.values()), 2) == 77646.97
    assert round(a["material"]["percent"], 2) == round(100 * 10683.72 / 77646.97, 2)
    assert round(a["Residual"]["percent"], 2) == round(100 * 18230.75 / 77646.97, 2)
    assert abs(sum(r["percent"] for r in a.values()) - 100) < 1e-9


def test_one_way_anova_and_tukey_match_montgomery_example_3_1_and_3_7():
    df = etch()
    t = by_term(anova.table(anova.fit(df, ["power"]), 2))
    assert round(t["power"]["sum_sq"], 2) == 66870.55
    assert round(t["Residual"]["sum_sq"], 2) == 5339.20
    assert round(t["power"]["F"], 2) == 66.80
    fit = anova.fit(df, ["power"])
    rows = posthoc.compare(df, ["power"], ["power"], 0.05, posthoc.TUKEY, fit.model.mse_resid, fit.model.df_resid)
    assert len(rows) == 6 and all(r["reject"] for r in rows)
    diffs = {(r["group1"], r["group2"]): r["meandiff"] for r in rows}
    assert round(diffs[("power=160", "power=180")], 1) == 36.2
    assert round(diffs[("power=200", "power=220")], 1) == 81.6
    # T_0.05 = q_0.05(4, 16) sqrt(MS_E / n) = 4.05 sqrt(333.70 / 5) = 33.09 in
    # the book, with q rounded to 4.05 (the exact q is 4.046: 33.05).
    half = [(r["upper"] - r["lower"]) / 2 for r in rows]
    assert np.allclose(half, half[0])
    assert abs(half[0] - 33.09) < 0.05
    # ... and the adjusted p-values and intervals agree with scipy's and
    # statsmodels' implementations (one factor: the factorial model is the
    # one-way model, so the error terms are the same).
    ref = stats.tukey_hsd(*[np.array(v, float) for v in ETCH.values()])
    ci = ref.confidence_interval(0.95)
    sm = pairwise_tukeyhsd(df["value"].to_numpy(), df["power"].to_numpy(), alpha=0.05)
    for k, r in enumerate(rows):
        i = list(ETCH).index(r["group1"].split("=")[1])
        j = list(ETCH).index(r["group2"].split("=")[1])
        assert r["p_adj"] == pytest.approx(ref.pvalue[i, j], abs=1e-6)
        assert r["p_adj"] == pytest.approx(sm.pvalues[k], abs=1e-6)
        assert r["meandiff"] == pytest.approx(sm.meandiffs[k])
        assert (r["lower"], r["upper"]) == pytest.approx((ci.low[j, i], ci.high[j, i]), rel=1e-6)


def test_permutation_f_is_the_type_iii_f_and_p_is_close_to_the_f_test():
    f = anova.fit(battery(), ["material", "temperature"])
    perm = by_term(permutation.permutation_anova(f, 9999, seed=5))
    t3 = by_term(anova.table(f, 3))
    for term in ("material", "temperature", "material:temperature"):
        assert perm[term]["F"] == pytest.approx(t3[term]["F"], rel=1e-9)
    # normal data: the permutation p tracks the F-test's p (Monte Carlo error ~0.0005)
    assert abs(perm["material"]["p"] - 0.0020) < 0.0015
    assert abs(perm["material:temperature"]["p"] - 0.0186) < 0.006
    assert perm["temperature"]["p"] == 1 / 10000


def test_permutation_is_reproducible_from_its_seed():
    f = anova.fit(battery(), ["material", "temperature"])
    a = permutation.permutation_anova(f, 2999, seed=11)
    b = permutation.permutation_anova(f, 2999, seed=11)
    c = permutation.permutation_anova(f, 2999, seed=12)
    assert a == b
    assert [r["p"] for r in a] != [r["p"] for r in c]


def null_frame(rng, reps=3):
    rows = [{"flavour": fl, "rate": r, "value": rng.exponential(1.0), "order": 0}
            for fl in ("none", "per-packet") for r in ("lo", "hi") for _ in range(reps)]
    df = pd.DataFrame(rows)
    df["order"] = rng.permutation(len(df))
    return df


def test_permutation_p_values_are_uniform_under_the_null():
    rng = np.random.default_rng(2024)
    ps = {"flavour": [], "flavour:rate": []}
    for i in range(200):
        f = anova.fit(null_frame(rng), ["flavour", "rate"])
        res = by_term(permutation.permutation_anova(f, 499, seed=i))
        for k in ps:
            ps[k].append(res[k]["p"])
    for k, v in ps.items():
        assert stats.kstest(v, "uniform").pvalue > 0.01, k
        assert 0.02 <= np.mean(np.array(v) < 0.05) <= 0.10, k  # size of the test


def test_turning_point_test():
    up = checks.turning_point_test(np.arange(10.0))
    assert up["turning_points"] == 0 and up["expected"] == pytest.approx(16 / 3)
    assert up["z"] == pytest.approx((0 - 16 / 3) / np.sqrt((160 - 29) / 90))
    alt = checks.turning_point_test([0, 1] * 10)
    assert alt["turning_points"] == 18 and alt["p"] < 0.001
    rng = np.random.default_rng(7)
    res = [checks.turning_point_test(rng.normal(size=60)) for _ in range(400)]
    # The count is discrete, so its p-values are not uniform (no KS test);
    # instead its standardised value has mean 0 and variance 1 under i.i.d.
    # data (checks E[T] and Var[T]) and the test's size is near 5 %.
    z = np.array([r["z"] for r in res])
    assert abs(z.mean()) < 0.15 and 0.85 < z.std() < 1.15
    assert 0.02 <= np.mean([r["p"] < 0.05 for r in res]) <= 0.09


def test_bootstrap_is_reproducible_and_covers_the_true_effect():
    rng = np.random.default_rng(9)
    a = bootstrap.relative_ci([9, 10, 11, 10.5], [19, 20, 21, 20.2], seed=3, method=bootstrap.BCA)
    assert a == bootstrap.relative_ci([9, 10, 11, 10.5], [19, 20, 21, 20.2], seed=3, method=bootstrap.BCA)
    assert a != bootstrap.relative_ci([9, 10, 11, 10.5], [19, 20, 21, 20.2], seed=4, method=bootstrap.BCA)
    assert a["ci_low"] < a["estimate"] < a["ci_high"] < 0
    hits = 0
    sims = 100
    for i in range(sims):
        base = rng.normal(100, 10, 15)
        lvl = rng.normal(80, 10, 15)  # true relative difference -0.2
        r = bootstrap.relative_ci(lvl, base, resamples=1999, seed=i)
        hits += r["ci_low"] <= -0.2 <= r["ci_high"]
    assert 0.86 <= hits / sims <= 1.0


def write_runs(path, values, fail=()):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "order", "replication", "status", "error", "factor:flavour", "factor:rate", "response:rate_pps"])
        for i, (fl, rate, rep, v) in enumerate(values):
            status, err = ("failed", "sender exited 1") if i in fail else ("ok", "")
            w.writerow([i, (7 * i) % len(values), rep, status, err, fl, rate, "" if i in fail else v])


def test_analyze_end_to_end_finds_a_planted_effect_and_lists_failed_runs(tmp_path):
    rng = np.random.default_rng(1)
    vals = [(fl, rate, rep, float(rate) * (0.75 if fl == "per-packet" and rate == "300" else 1) + rng.normal(0, 2))
            for fl in ("uninstrumented", "per-packet") for rate in ("100", "300") for rep in range(4)]
    p = tmp_path / "runs.csv"
    write_runs(p, vals, fail={1})
    res = analyze(p, permutations=999, resamples=1999)
    assert res["design"]["baseline"] == "uninstrumented"
    assert len(res["design"]["failed_runs"]) == 1 and res["design"]["failed_runs"][0]["error"] == "sender exited 1"
    r = res["responses"][0]
    assert r["n"] == 15
    eff = {e["at"]["rate"]: e for e in r["effects"]}
    assert eff["300"]["ci_low"] < -0.25 + 0.02 and eff["300"]["ci_high"] > -0.25 - 0.02
    assert "per-packet reduces rate_pps by 25." in r["verdict"] and "at rate 300" in r["verdict"]
    assert any(t["term"] == "flavour:rate" for t in r["tukey"])


def test_analyze_under_the_null_says_no_effect_and_uses_the_permutation_test_when_not_normal(tmp_path):
    rng = np.random.default_rng(4)
    vals = [(fl, rate, rep, 1000 + 200 * rng.standard_exponential() ** 3)
            for fl in ("uninstrumented", "per-packet") for rate in ("100", "300") for rep in range(8)]
    p = tmp_path / "runs.csv"
    write_runs(p, vals)
    r = analyze(p, permutations=999, resamples=999)["responses"][0]
    assert r["checks"]["normality_rejected"]
    assert r["test_used"] == "permutation ANOVA"
    assert "no statistically significant effect of flavour" in r["verdict"]
