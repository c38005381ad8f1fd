"""One sentence per response: is there an effect, how large, and where.

Multiplicity: a response has one effect per treatment level and
combination of the other factors (e.g. 2 instrumented levels x 3 rates =
6 cells). Each cell's Welch p is adjusted across the cells of the
response with Holm's step-down procedure (Holm 1979, Scand. J. Stat. 6(2)
65-70), which keeps the probability of naming
any cell without an effect at or below alpha; a cell is named in the
verdict only when its adjusted p is below alpha. Benjamini-Hochberg
(1995, JRSS B 57(1) 289-300) is the alternative when a false discovery
rate is the wanted guarantee. Both are a few lines (the test suite checks
them against statsmodels' multipletests, which costs tens of
milliseconds per call)."""

from __future__ import annotations

import numpy as np

HOLM = "holm"
METHODS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}


def fmt_p(p: float | None) -> str:
    if p is None:
        return "p not computable"
    return "p < 0.0001" if p < 0.0001 else f"p = {p:.4f}"


def _at(at: dict) -> str:
    return " and ".join(f"{k} {v}" for k, v in at.items())


def adjusted(p, method: str = HOLM) -> np.ndarray:
    """Adjusted p-values: Holm's step-down (familywise error) or
    Benjamini-Hochberg's step-up (false discovery rate)."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == HOLM:
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif method == "fdr_bh":
        adj = np.minimum.accumulate((m / np.arange(m, 0, -1) * ranked[::-1]))[::-1]
    else:
        raise ValueError(f"unknown adjustment {method!r}: use one of {', '.join(METHODS)}")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


def adjust(effects: list[dict], method: str = HOLM) -> int:
    """Adds p_adj to every effect with a p (None elsewhere); returns the
    number of cells in the family. method: 'holm' (familywise error) or
    'fdr_bh' (Benjamini-Hochberg, false discovery rate)."""
    if method not in METHODS:
        raise ValueError(f"unknown adjustment {method!r}: use one of {', '.join(METHODS)}")
    tested = [e for e in effects if e.get("p") is not None]
    if tested:
        adj = adjusted([e["p"] for e in tested], method)
        for e, p in zip(tested, adj):
            e["p_adj"] = float(p)
    for e in effects:
        e.setdefault("p_adj", None)
    return len(tested)


def verdict(response: str, treatment: str, tests: list[dict], effects: list[dict], alpha: float, test_name: str,
            method: str = HOLM) -> str:
    """tests: the chosen test's rows (F-test or permutation); effects: the
    relative differences to the baseline, with p_adj (see adjust)."""
    involved = [t for t in tests if treatment in t["term"].split(":") and t.get("p") is not None]
    main = next((t for t in involved if t["term"] == treatment), None)
    significant = [t for t in involved if t["p"] < alpha]
    if not involved:
        return f"{response}: the {test_name} could not test {treatment} (too few runs or no variation)."
    if not significant:
        p = main["p"] if main else min(t["p"] for t in involved)
        return f"{response}: no statistically significant effect of {treatment} ({fmt_p(p)}, {test_name})."
    terms = ", ".join(f"{t['term']} {fmt_p(t['p'])}" for t in significant)
    family = sum(1 for e in effects if e.get("p") is not None)
    adj = f"{METHODS[method]}-adjusted over {family} cell{'s' if family != 1 else ''}"
    clauses = []
    for e in effects:
        lo, hi, pa = e.get("ci_low"), e.get("ci_high"), e.get("p_adj")
        if e.get("estimate") is None or pa is None or pa >= alpha:
            continue
        verb = "reduces" if e["estimate"] < 0 else "increases"
        pct = abs(e["estimate"]) * 100
        ci = (f"{round(e.get('confidence', 0.95) * 100)} % CI {lo * 100:+.1f} % to {hi * 100:+.1f} %, "
              if lo is not None and hi is not None else "")
        where = f" at {_at(e['at'])}" if e["at"] else ""
        clauses.append(f"{treatment} {e['level']} {verb} {response} by {pct:.1f} % ({ci}{fmt_p(pa)} {adj}){where}")
    if not clauses:
        return (f"{response}: the {test_name} finds an effect of {treatment} ({terms}), but no cell's difference "
                f"to the baseline has a {METHODS[method]}-adjusted p below {alpha} ({family} cells tested).")
    return f"{response}: " + "; ".join(clauses) + f" ({test_name}: {terms})."
