"""The observer-effect toolkit's statistics: load the runs of a factorial
experiment (`streamgauge observe run` writes them), test whether the
instrumentation changes the responses, and report it.

    python3 -m streamgauge.observe analyze runs.csv --out analysis.json
    python3 -m streamgauge.observe report analysis.json --html r.html --md r.md

    python3 -m streamgauge.observe plan --effect 0.1 --cv 0.15 --cells 6

The models, tests and distributions come from scipy/statsmodels. Written
here, each citing its source and checked in the test suite against
published examples or the library that has it: the turning-point test
(no library has it), the Freedman-Lane permutation loop within strata
(statsmodels has no permutation ANOVA), Tukey HSD on the factorial
model's error term and Games-Howell (the libraries' Tukey functions
take one-way groups only), Fieller's interval with Welch degrees of
freedom, type II sums of squares for the allocation of variation, and
Holm / Benjamini-Hochberg adjustment.
"""

from .analyze import analyze

__all__ = ["analyze"]
