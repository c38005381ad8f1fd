"""The experiment's design as the runs file describes it.

`streamgauge observe run` writes one row per run with the columns
`run` (index in the plan's standard order), `order` (execution position),
`replication`, `status` (ok / failed), `error`, one `factor:<name>` column
per factor and one `response:<name>` column per response. Level order is
the order of first appearance in standard order (`run`), i.e. the plan's
order, so the first level of the first factor is the baseline unless told
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

FACTOR = "factor:"
RESPONSE = "response:"


@dataclass
class Design:
    factors: dict[str, list[str]]  # name -> levels in plan order
    responses: list[str]
    treatment: str  # the factor whose effect is the question (e.g. flavour)
    baseline: str  # its reference level (e.g. uninstrumented)
    replications: int = 0
    failed: list[dict] = field(default_factory=list)

    @property
    def blocks(self) -> list[str]:
        """The other factors: effects are reported per combination of them."""
        return [f for f in self.factors if f != self.treatment]

    def to_json(self) -> dict:
        return {
            "factors": self.factors,
            "responses": self.responses,
            "treatment": self.treatment,
            "baseline": self.baseline,
            "replications": self.replications,
            "failed_runs": self.failed,
        }


def from_runs(runs: pd.DataFrame, treatment: str | None = None, baseline: str | None = None) -> Design:
    factors_cols = [c for c in runs.columns if c.startswith(FACTOR)]
    responses = [c[len(RESPONSE):] for c in runs.columns if c.startswith(RESPONSE)]
    if not factors_cols:
        raise ValueError("the runs file has no factor:<name> column; write it with `streamgauge observe run`")
    if not responses:
        raise ValueError("the runs file has no response:<name> column; write it with `streamgauge observe run`")
    ordered = runs.sort_values("run") if "run" in runs.columns else runs
    factors = {c[len(FACTOR):]: list(dict.fromkeys(ordered[c].astype(str))) for c in factors_cols}
    treatment = treatment or next(iter(factors))
    if treatment not in factors:
        raise ValueError(f"treatment factor {treatment!r} is not in the runs file (factors: {', '.join(factors)})")
    baseline = baseline or factors[treatment][0]
    if baseline not in factors[treatment]:
        raise ValueError(f"baseline {baseline!r} is not a level of {treatment} ({', '.join(factors[treatment])})")
    reps = int(runs["replication"].nunique()) if "replication" in runs.columns else 0
    return Design(factors, responses, treatment, baseline, reps)


def power_per_cell(n: int, effect: float, cv: float, alpha: float = 0.05, cells: int = 1) -> float:
    """Power of the per-cell comparison of the verdict (two-sided t-test of
    equal means, n runs in each of the two cells) to detect a relative
    difference `effect` when the within-cell standard deviation is `cv`
    times the baseline mean, at level alpha / cells: the first step of
    Holm's procedure over `cells` cells, so a lower bound of the power
    after the adjustment. Noncentral t (statsmodels TTestIndPower)."""
    from statsmodels.stats.power import TTestIndPower

    return float(TTestIndPower().power(effect_size=abs(effect) / cv, nobs1=n, alpha=alpha / cells, ratio=1.0))


def replications_for(effect: float, cv: float, power: float = 0.8, alpha: float = 0.05, cells: int = 1,
                     minimum: int = 3, maximum: int = 100_000) -> int:
    """The smallest number of runs per cell (replications) whose
    per-cell comparison reaches `power` (see power_per_cell)."""
    if not effect:
        raise ValueError("effect: give the smallest relative difference worth detecting, e.g. 0.05 for 5 %")
    if not cv > 0:
        raise ValueError("cv: give the within-cell standard deviation as a fraction of the mean, e.g. 0.1 (from a pilot run)")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError("power and alpha must lie strictly between 0 and 1")
    if cells < 1:
        raise ValueError("cells: the number of (treatment level, other factors) cells compared to the baseline, at least 1")
    lo, hi = minimum, minimum
    while power_per_cell(hi, effect, cv, alpha, cells) < power:
        if hi >= maximum:
            raise ValueError(f"more than {maximum} runs per cell would be needed: the effect is too small for this noise")
        lo, hi = hi, min(2 * hi, maximum)
    while lo < hi:  # smallest n in [lo, hi] with enough power (power grows with n)
        mid = (lo + hi) // 2
        if power_per_cell(mid, effect, cv, alpha, cells) >= power:
            hi = mid
        else:
            lo = mid + 1
    return hi


def detectable_effect(n: int, cv: float, power: float = 0.8, alpha: float = 0.05, cells: int = 1) -> float:
    """The smallest relative difference that the per-cell comparison of
    power_per_cell detects with `power`, given n runs per cell and a
    within-cell SD of `cv` times the mean: what a finished design could
    have found, stated beside what it found."""
    from statsmodels.stats.power import TTestIndPower

    if n < 2 or not cv > 0:
        raise ValueError("detectable_effect: needs at least 2 runs per cell and a positive coefficient of variation")
    d = TTestIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha / cells, power=power, ratio=1.0)
    return float(d) * cv
