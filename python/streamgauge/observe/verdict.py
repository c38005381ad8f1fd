"""One sentence per response: is there an effect, how large, and where."""

from __future__ import annotations


def fmt_p(p: float | None) -> str:
    if p is None:
        return "p not computable"
    return "p < 0.0001" if p < 0.0001 else f"p = {p:.4f}"


def _at(at: dict) -> str:
    return " and ".join(f"{k} {v}" for k, v in at.items())


def verdict(response: str, treatment: str, tests: list[dict], effects: list[dict], alpha: float, test_name: str) -> str:
    """tests: the chosen test's rows (F-test or permutation); effects: the
    bootstrap relative differences to the baseline."""
    involved = [t for t in tests if treatment in t["term"].split(":") and t.get("p") is not None]
    main = next((t for t in involved if t["term"] == treatment), None)
    significant = [t for t in involved if t["p"] < alpha]
    if not involved:
        return f"{response}: the {test_name} could not test {treatment} (too few runs or no variation)."
    if not significant:
        p = main["p"] if main else min(t["p"] for t in involved)
        return f"{response}: no statistically significant effect of {treatment} ({fmt_p(p)}, {test_name})."
    terms = ", ".join(f"{t['term']} {fmt_p(t['p'])}" for t in significant)
    clauses = []
    for e in effects:
        lo, hi = e.get("ci_low"), e.get("ci_high")
        if e.get("estimate") is None or lo is None or hi is None or lo <= 0 <= hi:
            continue
        verb = "reduces" if e["estimate"] < 0 else "increases"
        pct = abs(e["estimate"]) * 100
        ci = f"{round(e.get('confidence', 0.95) * 100)} % CI {lo * 100:+.1f} % to {hi * 100:+.1f} %"
        where = f" at {_at(e['at'])}" if e["at"] else ""
        clauses.append(f"{treatment} {e['level']} {verb} {response} by {pct:.1f} % ({ci}){where}")
    if not clauses:
        return (f"{response}: the {test_name} finds an effect of {treatment} ({terms}), but no level's "
                f"bootstrap interval for its difference to the baseline excludes zero.")
    return f"{response}: " + "; ".join(clauses) + f" ({test_name}: {terms})."
