"""The published study's figures, regenerated from its analyses.

`python3 -m streamgauge.observe publish DIR --out DIR/results.md [--doc
docs/observer-effect.md]` reads every `DIR/study-*/analysis.json` (with
the study's `runs.csv` and `tools.csv` beside it) and the machine records
that `scripts/observer-study.sh` writes (`machine.tsv`,
`machine-load.tsv`), and writes one Markdown page holding every number
the study quotes: the machine and its load, per study and response the
test that decided, the treatment's p-values, the allocation of variation,
every cell's relative difference with its interval and adjusted p, the
cell means with their coefficients of variation, the smallest effect the
design could detect with the noise it met, and what the instrumented
components themselves counted. With `--doc`, the block between
`<!-- results:begin -->` and `<!-- results:end -->` in that file is
replaced by a summary table, so the prose around it carries no figure
that could go stale.

Why generated rather than written: a re-run on another machine must
change every figure at once, and a referee must be able to check that
the doc says what the analysis computed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .design import detectable_effect
from .verdict import METHODS, fmt_p

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
POWER = 0.8


def _pct(x: float | None, sign: bool = True) -> str:
    if x is None:
        return "–"
    digits = 2 if abs(x) < 0.01 else 1
    return f"{x * 100:+.{digits}f} %" if sign else f"{x * 100:.{digits}f} %"


def _ci(e: dict) -> str:
    if e.get("ci_low") is None or e.get("ci_high") is None:
        return "no interval"
    return f"{_pct(e['ci_low'])} to {_pct(e['ci_high'])}"


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}".replace(",", " ") if abs(x) >= 100 else f"{x:.4g}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    return ("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
            + "".join("| " + " | ".join(str(c) for c in r) + " |\n" for r in rows))


def _tsv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _treatment_tests(r: dict, treatment: str) -> list[dict]:
    rows = r.get("permutation") if r.get("test_used", "").startswith("permutation") else r.get("anova_type3")
    return [t for t in rows or [] if treatment in t["term"].split(":") and t.get("p") is not None]


def _treatment_share(r: dict, treatment: str) -> float:
    return sum(v["percent"] for v in r.get("variation", []) if treatment in v["term"].split(":"))


def _residual_share(r: dict) -> float | None:
    return next((v["percent"] for v in r.get("variation", []) if v["term"].lower() in ("residual", "residuals")), None)


def _named(r: dict, alpha: float) -> list[dict]:
    return [e for e in r.get("effects", []) if e.get("p_adj") is not None and e["p_adj"] < alpha]


def _cv_at(r: dict, treatment: str, baseline: str) -> dict[str, float]:
    """Coefficient of variation of the baseline's cells, by the other
    factors' levels (the noise a comparison with the baseline meets)."""
    out = {}
    for c in r.get("cells", []):
        if c.get(treatment) != baseline or not c.get("mean") or c.get("sd") is None:
            continue
        at = ", ".join(f"{k}={v}" for k, v in c.items() if k not in (treatment, "n", "mean", "sd"))
        out[at] = c["sd"] / abs(c["mean"])
    return out


def _study(name: str, a: dict, tools: list[dict], runs: list[dict]) -> tuple[str, list[list[str]], str]:
    """The study's section, its rows of the summary table and the
    per-cell table of its first (primary) response."""
    des, alpha = a["design"], a["alpha"]
    treatment, baseline = des["treatment"], des["baseline"]
    ok = sum(1 for r in runs if r.get("status") == "ok")
    out = [f"## Study: {name}\n"]
    out.append(f"Factors: {'; '.join(f'{f} {{{chr(44).join(lv)}}}' for f, lv in des['factors'].items())}. "
               f"Treatment {treatment}, baseline {baseline}; {des['replications']} replications; "
               f"{len(runs)} runs, {ok} succeeded, {len(des['failed_runs'])} failed. "
               f"Significance level {alpha}; per-cell verdicts {METHODS.get(a.get('adjust', 'holm'))}-adjusted; "
               f"permutations within {', '.join(a.get('strata') or []) or 'all runs'}. "
               f"[Full report](study-{name}/report.md).\n")
    summary = []
    primary = ""
    for r in a["responses"]:
        resp = r["response"]
        out.append(f"### {name}: {resp}\n")
        if "error" in r or "skipped" in r:
            out.append(f"{r['verdict']}\n")
            summary.append([name, resp, "not analysed", "–", "–", "–", "–"])
            continue
        tests = _treatment_tests(r, treatment)
        cvs = _cv_at(r, treatment, baseline)
        reps = des["replications"]
        cells = r.get("cells_tested") or 1
        mde = {at: detectable_effect(reps, cv, POWER, alpha, cells) for at, cv in cvs.items() if cv > 0}
        named = _named(r, alpha)
        out.append(f"Decided by the {r['test_used']}; "
                   + "; ".join(f"{t['term']} {fmt_p(t['p'])}" for t in tests) + ". "
                   f"Share of the variation explained by {treatment} and its interactions: "
                   f"{_treatment_share(r, treatment):.2f} %; residual {_num(_residual_share(r))} %"
                   f"{' (type II sums of squares: unbalanced)' if r.get('variation_type') == 2 else ''}.\n")
        out.append(r["verdict"] + "\n")
        out.append(_effects_table(r, named))
        if not primary:
            primary = f"**{name}**, {resp} (decided by the {r['test_used']}):\n\n{_effects_table(r, named)}"
        factors = list(des["factors"])
        out.append(_table([*factors, "n", "mean", "SD", "CV"],
                          [[c[f] for f in factors] + [c["n"], _num(c["mean"]), _num(c["sd"]),
                                                       _pct(c["sd"] / abs(c["mean"]), False) if c["mean"] else "–"]
                           for c in r["cells"]]))
        if mde:
            out.append(f"Smallest relative difference detectable with {POWER * 100:.0f} % power by a cell's comparison "
                       f"({reps} runs per cell, level {alpha} / {cells} cells, the baseline's own noise): "
                       + "; ".join(f"{at or 'overall'}: {_pct(d, False)}" for at, d in mde.items()) + ".\n")
        worst = max(mde.values()) if mde else None
        main = next((t for t in tests if t["term"] == treatment), None)
        strongest = min((e for e in r["effects"] if e.get("estimate") is not None and e.get("p_adj") is not None),
                        key=lambda e: (e["p_adj"], -abs(e["estimate"])), default=None)
        summary.append([
            name, resp, fmt_p(main["p"]) if main else "–",
            (f"{strongest['level']} at {', '.join(f'{k}={v}' for k, v in strongest['at'].items())}: "
             f"{_pct(strongest['estimate'])} ({_ci(strongest)}; adjusted {fmt_p(strongest['p_adj'])})")
            if strongest else "–",
            f"{len(named)} of {cells}", _pct(worst, False) if worst is not None else "–",
            f"{_treatment_share(r, treatment):.2f} %",
        ])
    if tools:
        out.append(f"### {name}: what the instrumented components counted\n")
        out.append(_tools_table(tools, runs, treatment))
    return "\n".join(out), summary, primary


def _effects_table(r: dict, named: list[dict]) -> str:
    return _table(
        ["level", "at", "relative difference", "95 % CI", "interval", "p (Welch)", "p adjusted", "named"],
        [[e["level"], ", ".join(f"{k}={v}" for k, v in e["at"].items()), _pct(e.get("estimate")), _ci(e),
          e.get("method", "–"), fmt_p(e.get("p")).removeprefix("p = "), fmt_p(e.get("p_adj")).removeprefix("p = "),
          "yes" if e in named else "no"] for e in r["effects"]])


def _tools_table(tools: list[dict], runs: list[dict], treatment: str) -> str:
    level = {r["run"]: r.get(f"factor:{treatment}", "") for r in runs}
    groups: dict[tuple, list[float]] = {}
    for t in tools:
        try:
            v = float(t["value"])
        except (TypeError, ValueError):
            continue
        groups.setdefault((level.get(t["run"], ""), t["component"], t["metric"]), []).append(v)
    rows = [[lv, comp, metric, len(vs), _num(min(vs)), _num(sorted(vs)[len(vs) // 2]), _num(max(vs))]
            for (lv, comp, metric), vs in sorted(groups.items())]
    return _table([treatment, "component", "metric", "runs", "min", "median", "max"], rows)


SUMMARY_HEADERS = ["study", "response", "treatment main effect", "strongest cell: difference to the baseline (95 % CI)",
                   "cells named (adjusted p < α)", f"detectable at {POWER * 100:.0f} % power (worst cell)",
                   "variation explained by the treatment"]


def publish(folder: str | Path, out: str | Path, doc: str | Path | None = None) -> str:
    folder = Path(folder)
    studies = sorted(p.parent for p in folder.glob("study-*/analysis.json"))
    if not studies:
        raise ValueError(f"no study-*/analysis.json under {folder}: run scripts/observer-study.sh first")
    order = {n: i for i, n in enumerate(["client", "inline", "capture", "c-client", "iperf3"])}
    studies.sort(key=lambda p: (order.get(p.name.removeprefix("study-"), 99), p.name))
    parts = ["# Observer-effect study: results\n",
             "Generated by `python3 -m streamgauge.observe publish` (the last step of "
             "`scripts/observer-study.sh`) from the analyses beside this file. Do not edit by hand: re-run the "
             "script. docs/observer-effect.md explains the design, the method and what the figures mean.\n"]
    machine = _tsv(folder / "machine.tsv")
    if machine:
        parts.append("## Machine\n")
        parts.append(_table(["", ""], [[m["key"], m["value"]] for m in machine]))
    loads = _tsv(folder / "machine-load.tsv")
    if loads:
        parts.append("## Load while the plans ran\n")
        parts.append("Load averages (1, 5, 15 min) when each plan started (after waiting for the 1-minute load to "
                     "fall below the recorded threshold) and when it ended. During a run the study's own sender "
                     "and receiver keep up to 2 cores busy, which the end figures include.\n")
        parts.append(_table(["study", "start (UTC)", "load at start", "end (UTC)", "load at end", "exit"],
                            [[x["study"], x["start"], x["load_start"], x["end"], x["load_end"], x["exit"]] for x in loads]))
    summary_rows = []
    sections = []
    primaries = []
    for s in studies:
        name = s.name.removeprefix("study-")
        a = json.loads((s / "analysis.json").read_text())
        runs = _read_csv(s / "runs.csv")
        tools = _read_csv(s / "tools.csv")
        text, rows, primary = _study(name, a, tools, runs)
        sections.append(text)
        primaries.append(primary)
        summary_rows += rows
    summary = _table(SUMMARY_HEADERS, summary_rows)
    parts.append("## Summary\n")
    parts.append(summary)
    parts += sections
    text = "\n".join(parts)
    Path(out).write_text(text)
    if doc:
        cells = ("\nEvery cell of each study's primary response, relative to the baseline, with its interval and "
                 "its p adjusted over the cells of the response (*named*: adjusted p below the significance level):\n\n"
                 + "\n".join(x for x in primaries if x))
        _splice(Path(doc), loads, summary + cells)
    return text


def _read_csv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _splice(doc: Path, loads: list[dict], summary: str) -> None:
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{doc} has no {BEGIN} ... {END} block to replace")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    when = ""
    if loads:
        starts = [x["load_start"].split()[0] for x in loads]
        when = (f"Plans run {loads[0]['start']} to {loads[-1]['end']}; 1-minute load when each plan started: "
                f"{', '.join(starts)}.\n\n")
    block = f"{BEGIN}\n<!-- generated by python3 -m streamgauge.observe publish: do not edit -->\n{when}{summary}{END}"
    doc.write_text(head + block + tail)
