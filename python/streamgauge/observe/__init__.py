"""The observer-effect toolkit's statistics: load the runs of a factorial
experiment (`streamgauge observe run` writes them), test whether the
instrumentation changes the responses, and report it.

    python3 -m streamgauge.observe analyze runs.csv --out analysis.json
    python3 -m streamgauge.observe report analysis.json --html r.html --md r.md

Every statistic comes from scipy/statsmodels except the turning-point test
(no library has it) and the Freedman-Lane permutation loop (statsmodels has
no permutation ANOVA); both cite their source.
"""

from .analyze import analyze

__all__ = ["analyze"]
