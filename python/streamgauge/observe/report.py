"""The report of an analysis: self-contained HTML (plots inlined as SVG)
and Markdown (plots written next to it as SVG files), built from the same
sections so the two always say the same."""

from __future__ import annotations

import html
import json
from pathlib import Path

from . import plots
from .verdict import fmt_p


class Doc:
    def __init__(self):
        self.html: list[str] = []
        self.md: list[str] = []
        self.figures: dict[str, str] = {}

    def h(self, level: int, text: str):
        anchor = "".join(c if c.isalnum() else "-" for c in text.lower())
        self.html.append(f'<h{level} id="{anchor}">{html.escape(text)}</h{level}>')
        self.md.append(f"{'#' * level} {text}\n")

    def p(self, text: str):
        self.html.append(f"<p>{html.escape(text)}</p>")
        self.md.append(f"{text}\n")

    def table(self, headers: list[str], rows: list[list]):
        cells = [[_fmt(v) for v in r] for r in rows]
        self.html.append(
            "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in cells)
            + "</table>"
        )
        self.md.append("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
                       + "".join("| " + " | ".join(r) + " |\n" for r in cells))

    def figure(self, name: str, title: str, svg: str):
        self.figures[name] = svg
        self.html.append(f"<figure>{svg}<figcaption>{html.escape(title)}</figcaption></figure>")
        self.md.append(f"![{title}]({name})\n")


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.6g}"
    return str(v)


def build(a: dict, stem: str) -> Doc:
    d = Doc()
    des = a["design"]
    d.h(1, "Observer-effect report")
    d.p(f"Source: {a['source']}. Significance level {a['alpha']}; permutations and resamples seeded with {a['seed']}.")
    if "strata" in a:
        d.p(f"Permutation strata: {', '.join(a['strata']) or 'none (all runs exchangeable)'}. Per-cell verdicts "
            f"adjusted for multiplicity with {_adjust_name(a)}.")
    d.h(2, "Design")
    d.table(["factor", "levels"], [[f, ", ".join(lv)] for f, lv in des["factors"].items()])
    d.p(f"Treatment factor {des['treatment']} (baseline {des['baseline']}); replications {des['replications']}; "
        f"responses {', '.join(des['responses'])}.")
    d.h(2, "Failed runs")
    if des["failed_runs"]:
        keys = [k for k in des["failed_runs"][0] if k != "error"]
        d.table([*keys, "error"], [[r[k] for k in keys] + [r["error"]] for r in des["failed_runs"]])
        d.p(f"{len(des['failed_runs'])} run(s) failed and are excluded from the analysis below.")
    else:
        d.p("None: every run succeeded.")
    for r in a["responses"]:
        _response(d, {**r, "bca_min_n": a.get("bca_min_n"), "adjust": a.get("adjust", "holm")}, des, stem)
    return d


def _anova_rows(rows):
    return [[t["term"], t["df"], t["sum_sq"], t["mean_sq"], t["F"], t["p"]] for t in rows]


def _response(d: Doc, r: dict, des: dict, stem: str):
    name = r["response"]
    d.h(2, f"Response: {name}")
    d.h(3, "Verdict")
    d.p(r["verdict"])
    if "error" in r:
        return
    if "skipped" in r:
        factors = [k for k in r["cells"][0] if k not in ("n", "mean", "sd")]
        d.table([*factors, "n", "mean"], [[c[f] for f in factors] + [c["n"], c["mean"]] for c in r["cells"]])
        return
    d.p(f"Model: {r['formula']} (sum-to-zero contrasts), {r['n']} runs; decisions use the {r['test_used']}.")
    c = r["checks"]
    d.h(3, "Assumption checks")
    d.table(["group", "n", "Shapiro-Wilk W", "p"], [[s["group"], s["n"], s["W"], s["p"]] for s in c["shapiro_groups"]])
    tp = c["turning_point"]
    d.table(
        ["check", "statistic", "p"],
        [
            ["Shapiro-Wilk on residuals", c["shapiro_residuals"]["W"], c["shapiro_residuals"]["p"]],
            ["Levene (median-centred)", c["levene"]["W"] if c["levene"] else None, c["levene"]["p"] if c["levene"] else None],
            ["Breusch-Pagan (LM)", c["breusch_pagan"]["LM"], c["breusch_pagan"]["p"]],
            [f"turning points in run order ({tp['turning_points']} of {tp['expected'] and round(tp['expected'], 1)} expected"
             f"{_ties(tp)})", tp["z"], tp["p"]],
        ],
    )
    d.p(_decides(c))
    d.h(3, "ANOVA (type III)")
    d.table(["term", "df", "sum sq", "mean sq", "F", "p"], _anova_rows(r["anova_type3"]))
    d.h(3, "ANOVA (type II)")
    d.table(["term", "df", "sum sq", "mean sq", "F", "p"], _anova_rows(r["anova_type2"]))
    d.h(3, "Permutation ANOVA")
    if "permutation" in r:
        d.table(["term", "df", "F", "p", "permutations", "permuted within"],
                [[t["term"], t["df"], t["F"], t["p"], t["permutations"], ", ".join(t.get("strata", [])) or "all runs"]
                 for t in r["permutation"]])
        d.p("Freedman-Lane: residuals of the model without the term are permuted; p = (1 + #{F* >= F}) / (B + 1). "
            "Residuals are permuted only within the level combinations of the strata factors (errors are "
            "exchangeable within a stratum, not across strata whose variances differ); a term made of strata "
            "factors only is permuted across its own levels.")
    else:
        d.p("Not run: neither normality nor equal variances were rejected.")
    d.h(3, "Tukey HSD")
    ph = r.get("posthoc")
    if ph:
        d.p(f"Procedure: {ph['procedure']}, because {ph['reason']}"
            + (f" (MS_E = {_fmt(ph['mse'])} on {_fmt(ph['df_resid'])} degrees of freedom)." if ph["procedure"] == "Tukey HSD"
               else ".")
            + " An interaction with the treatment compares the treatment's levels within each level of the other "
              "factors; group means are unweighted means of cell means.")
    if not r["tukey"]:
        d.p("No significant term to compare.")
    for t in r["tukey"]:
        d.p(f"Term {t['term']}:")
        d.table(["group 1", "group 2", "mean diff", "df", "p adj", "lower", "upper", "reject"],
                [[x["group1"], x["group2"], x["meandiff"], x.get("df"), x["p_adj"], x["lower"], x["upper"], x["reject"]]
                 for x in t["comparisons"]])
    d.h(3, "Allocation of variation")
    d.table(["term", "sum sq", "% of variation"], [[v["term"], v["sum_sq"], v["percent"]] for v in r["variation"]])
    if r.get("variation_type") == 2:
        d.p("Unbalanced design (cells have different numbers of runs): type II sums of squares, which do not depend "
            "on the order of the factors; the 'shared' row is variation that the correlated terms explain jointly and that cannot be assigned to one of them.")
    elif r.get("variation_type") == 1:
        d.p("Balanced design: the sums of squares of the terms and the residual add up to the total.")
    d.h(3, "Effects")
    d.table(["level", "at", "relative difference to baseline", "CI low", "CI high", "interval", "p (Welch)",
             "p adjusted", "note"],
            [[e["level"], ", ".join(f"{k}={v}" for k, v in e["at"].items()), e["estimate"], e["ci_low"], e["ci_high"],
              e.get("method", "BCa bootstrap"), e.get("p"), e.get("p_adj"), e.get("note", "")] for e in r["effects"]])
    rule = _interval_rule(r["bca_min_n"]) if r.get("bca_min_n") else "bootstrap BCa (an analysis by an older version)"
    d.p(f"Intervals of mean(level) / mean({des['baseline']}) - 1: {rule}; main {des['treatment']} "
        f"{fmt_p(_main_p(r, des))}.")
    if "cells_tested" in r:
        d.p(f"Multiplicity: each cell's Welch p is adjusted with {_adjust_name(r)} across the {r['cells_tested']} "
            f"cells of {name}; the verdict names a cell only when its adjusted p is below the significance level.")
    factors = list(des["factors"])
    blocks = [f for f in factors if f != des["treatment"]]
    d.h(3, "Plots")
    d.figure(f"{stem}-{name}-means.svg", "Means with 95 % CIs per treatment", plots.means(r["cells"], factors, name))
    d.figure(f"{stem}-{name}-interaction.svg", "Interaction plot",
             plots.interaction(r["values"], des["treatment"], blocks, des["factors"], name))
    d.figure(f"{stem}-{name}-residuals.svg", "Residual diagnostics", plots.residuals(r["residuals"], name))


def _ties(tp) -> str:
    return f"; {tp['ties']} tied value(s) excluded" if tp.get("ties") else ""


def _decides(c) -> str:
    why = [w for w, k in (("normality", "normality_rejected"), ("equal variances", "variances_rejected")) if c.get(k)]
    if why:
        return f"Rejected: {' and '.join(why)}. The permutation ANOVA decides."
    return "Neither normality nor equal variances rejected: the F-test decides."


def _interval_rule(n: int) -> str:
    return (f"BCa bootstrap when both cells have at least {n} runs, otherwise Fieller's interval with Welch "
            f"degrees of freedom (BCa undercovers at fewer runs)")


def _adjust_name(r) -> str:
    return {"holm": "Holm's procedure", "fdr_bh": "Benjamini-Hochberg"}.get(r.get("adjust", "holm"), r.get("adjust"))


def _main_p(r, des):
    rows = r.get("permutation") or r["anova_type3"]
    return next((t["p"] for t in rows if t["term"] == des["treatment"]), None)


def write_reports(analysis: str | Path, html_path: str | None, md_path: str | None) -> None:
    a = json.loads(Path(analysis).read_text())
    stem = Path(md_path).stem if md_path else "report"
    d = build(a, stem)
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        style = ("body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse;margin:.5em 0}"
                 "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}figure{margin:1em 0}")
        Path(html_path).write_text(
            f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Observer-effect report</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(d.html) + "\n</body></html>\n")
    if md_path:
        out = Path(md_path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(d.md))
        for name, svg in d.figures.items():
            (out.parent / name).write_text(svg)
