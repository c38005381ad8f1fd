"""Pairwise comparisons after the factorial ANOVA (streamgauge.observe.posthoc).

Published results reproduced:
- Tukey HSD with the factorial model's error term: Montgomery, Design and
  Analysis of Experiments (8th ed., 2013), Example 5.1 (battery life),
  the comparison of the three materials at 70 °F with MS_E = 675.21 on
  27 degrees of freedom: T_0.05 = q_0.05(3, 27) sqrt(MS_E / 4) = 45.47,
  means 57.25, 119.75, 145.75; materials 2 and 3 each differ from 1, not
  from each other.
- Games-Howell: the pain threshold by hair colour data (McClave & Dietrich,
  Statistics, 1991; 4 groups of 4-5 people), whose Games-Howell t,
  Welch df and adjusted p are printed by JASP and R's userfriendlyscience
  (t 2.47, 1.42, 1.75, 4.09, 1.11, 3.56; df 7.91, 7.94, 6.56, 8.00, 6.82,
  6.77; p 0.1401, 0.5228, 0.3715, 0.0148, 0.6980, 0.0378).
- Tukey-Kramer (unequal n) against scipy.stats.tukey_hsd.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from streamgauge.observe import anova, checks, posthoc
from streamgauge.observe.analyze import analyze

from test_observe_stats import battery, write_runs

HAIR = {
    "Light Blond": [62, 60, 71, 55, 48],
    "Dark Blond": [63, 57, 52, 41, 43],
    "Light Brunette": [42, 50, 41, 37],
    "Dark Brunette": [32, 39, 51, 30, 35],
}


def hair() -> pd.DataFrame:
    return pd.DataFrame([{"hair": k, "value": float(v)} for k, vs in HAIR.items() for v in vs])


def test_tukey_uses_the_factorial_error_term_montgomery_example_5_1():
    df = battery()
    f = anova.fit(df, ["material", "temperature"])
    mse, dfe = f.model.mse_resid, f.model.df_resid
    assert round(mse, 2) == 675.21 and dfe == 27
    rows = posthoc.compare(df, ["material", "temperature"], ["material"], 0.05, posthoc.TUKEY, mse, dfe,
                           within={"temperature": "70"})
    got = {(r["group1"], r["group2"]): r for r in rows}
    assert got[("material=1", "material=2")]["meandiff"] == pytest.approx(119.75 - 57.25)
    assert got[("material=1", "material=3")]["meandiff"] == pytest.approx(145.75 - 57.25)
    assert got[("material=2", "material=3")]["meandiff"] == pytest.approx(145.75 - 119.75)
    # The book rounds q_0.05(3, 27) to 3.50 (45.47); the exact q is 3.506.
    for r in rows:
        assert (r["upper"] - r["lower"]) / 2 == pytest.approx(45.47, abs=0.1)
        assert r["df"] == 27
    assert [got[k]["reject"] for k in sorted(got)] == [True, True, False]
    # The one-way error term (the old procedure) holds the temperature and
    # interaction effects too: 2029.19 on 33 df, three times MS_E.
    one_way = anova.fit(df, ["material"])
    assert round(one_way.model.mse_resid, 2) == 2029.19
    rows_1 = posthoc.compare(df, ["material"], ["material"], 0.05, posthoc.TUKEY, one_way.model.mse_resid,
                             one_way.model.df_resid)
    rows_f = posthoc.compare(df, ["material", "temperature"], ["material"], 0.05, posthoc.TUKEY, mse, dfe)
    for a, b in zip(rows_1, rows_f):
        assert a["meandiff"] == pytest.approx(b["meandiff"])  # balanced: the same means
        assert b["upper"] - b["lower"] < 0.65 * (a["upper"] - a["lower"])


def test_tukey_kramer_with_unequal_groups_matches_scipy():
    df = hair()
    f = anova.fit(df, ["hair"])
    rows = posthoc.compare(df, ["hair"], ["hair"], 0.05, posthoc.TUKEY, f.model.mse_resid, f.model.df_resid)
    ref = stats.tukey_hsd(*[np.array(v, float) for v in HAIR.values()])
    names = list(HAIR)
    for r in rows:
        i, j = names.index(r["group1"][5:]), names.index(r["group2"][5:])
        assert r["p_adj"] == pytest.approx(ref.pvalue[i, j], abs=1e-6)


def test_games_howell_matches_the_published_hair_colour_example():
    rows = posthoc.compare(hair(), ["hair"], ["hair"], 0.05, posthoc.GAMES_HOWELL)
    got = {frozenset((r["group1"][5:], r["group2"][5:])): r for r in rows}
    published = [  # pair, |t|, df, p
        (("Dark Blond", "Dark Brunette"), 2.47, 7.91, 0.1401),
        (("Dark Blond", "Light Blond"), 1.42, 7.94, 0.5228),
        (("Dark Blond", "Light Brunette"), 1.75, 6.56, 0.3715),
        (("Dark Brunette", "Light Blond"), 4.09, 8.00, 0.0148),
        (("Dark Brunette", "Light Brunette"), 1.11, 6.82, 0.6980),
        (("Light Blond", "Light Brunette"), 3.56, 6.77, 0.0378),
    ]
    for pair, t, dof, p in published:
        r = got[frozenset(pair)]
        assert round(abs(r["meandiff"]) / r["se"], 2) == t
        assert round(r["df"], 2) == dof
        assert round(r["p_adj"], 4) == p
        assert r["reject"] == (p < 0.05)
        # the interval excludes zero exactly when the pair is rejected
        assert (r["lower"] > 0 or r["upper"] < 0) == r["reject"]


def test_the_procedure_follows_levene():
    rng = np.random.default_rng(3)
    rows = [{"a": a, "b": b, "value": rng.normal(0, 1 if b == "x" else 50), "order": 0}
            for a in ("p", "q") for b in ("x", "y") for _ in range(6)]
    df = pd.DataFrame(rows)
    c = checks.run_checks(anova.fit(df, ["a", "b"]), 0.05)
    assert c["variances_rejected"] and c["levene"]["p"] < 0.05
    proc, why = posthoc.choose(c, 0.05)
    assert proc == posthoc.GAMES_HOWELL and "rejects equal variances" in why
    proc, why = posthoc.choose({"levene": {"W": 1.0, "p": 0.4}}, 0.05)
    assert proc == posthoc.TUKEY and "MS_E" in why
    with pytest.raises(ValueError, match="MS_E"):
        posthoc.compare(df, ["a", "b"], ["a"], 0.05, posthoc.TUKEY)


def test_analyze_reports_games_howell_with_unequal_variances(tmp_path):
    rng = np.random.default_rng(6)
    vals = [(fl, rate, rep, float(rate) * (0.8 if fl == "per-packet" and rate == "300" else 1)
             + rng.normal(0, 0.001 if rate == "100" else 15))
            for fl in ("uninstrumented", "per-packet") for rate in ("100", "300") for rep in range(6)]
    write_runs(tmp_path / "runs.csv", vals)
    r = analyze(tmp_path / "runs.csv", permutations=499, resamples=499)["responses"][0]
    assert r["checks"]["variances_rejected"]
    assert r["test_used"] == "permutation ANOVA"  # unequal variances: the stratified permutation test decides
    assert r["posthoc"]["procedure"] == posthoc.GAMES_HOWELL
    inter = next(t for t in r["tukey"] if t["term"] == "flavour:rate")
    # simple effects: flavour compared within each rate, one family per rate
    assert len(inter["comparisons"]) == 2
    at300 = next(c for c in inter["comparisons"] if "rate=300" in c["group1"])
    assert at300["reject"] and at300["meandiff"] == pytest.approx(-60, abs=25)
