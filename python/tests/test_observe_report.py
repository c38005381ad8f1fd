"""The observer-effect report: every table and plot section, in HTML
(self-contained: plots inlined as SVG) and Markdown (plots as files)."""

from __future__ import annotations

import re

import numpy as np

from streamgauge.observe.analyze import analyze, write
from streamgauge.observe.report import write_reports

from test_observe_stats import write_runs

SECTIONS = [
    "Design", "Failed runs", "Verdict", "Assumption checks", "ANOVA (type III)", "ANOVA (type II)",
    "Permutation ANOVA", "Tukey HSD", "Allocation of variation", "Effects", "Plots",
]
FIGURES = ["Means with 95 % CIs per treatment", "Interaction plot", "Residual diagnostics"]


def check_report(html: str, md: str, responses: list[str]) -> None:
    """Shared with the end-to-end test of `streamgauge observe`."""
    for s in SECTIONS:
        assert f"## {s}" in md or f"### {s}" in md, s
        assert f">{s}</h" in html.replace("&#x27;", "'"), s
    for r in responses:
        assert f"## Response: {r}" in md
    for fig in FIGURES:
        assert md.count(f"![{fig}]") == len(responses), fig
        assert html.count(f"<figcaption>{fig}</figcaption>") == len(responses), fig
    # self-contained: SVG inline, nothing fetched
    assert html.count("<svg") >= 3 * len(responses)
    assert not re.search(r"""(src|href)=["']https?:""", html)


def test_report_has_every_section_and_plot(tmp_path):
    rng = np.random.default_rng(8)
    vals = [(fl, rate, rep, float(rate) * (0.9 if fl == "per-packet" else 1) + rng.normal(0, 3))
            for fl in ("uninstrumented", "per-packet") for rate in ("100", "300") for rep in range(3)]
    write_runs(tmp_path / "runs.csv", vals, fail={4})
    a = analyze(tmp_path / "runs.csv", permutations=999, resamples=999)
    write(a, tmp_path / "analysis.json")
    write_reports(tmp_path / "analysis.json", str(tmp_path / "r.html"), str(tmp_path / "md" / "r.md"))
    html = (tmp_path / "r.html").read_text()
    md = (tmp_path / "md" / "r.md").read_text()
    check_report(html, md, ["rate_pps"])
    for link in re.findall(r"\]\(([^)]+\.svg)\)", md):
        assert (tmp_path / "md" / link).read_text().startswith("<svg")
    assert "sender exited 1" in md and "sender exited 1" in html
    assert "per-packet reduces rate_pps by" in md


def test_a_treatment_without_successful_runs_is_reported_not_dropped(tmp_path):
    from streamgauge.observe.__main__ import main

    vals = [(fl, rate, rep, 100.0 + rep) for fl in ("uninstrumented", "per-packet") for rate in ("1", "2") for rep in range(3)]
    write_runs(tmp_path / "runs.csv", vals, fail={9, 10, 11})  # every per-packet, rate 2 run
    out = tmp_path / "a.json"
    assert main(["analyze", str(tmp_path / "runs.csv"), "--out", str(out), "--permutations", "99"]) == 1
    assert main(["report", str(out), "--md", str(tmp_path / "r.md")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert md.count("sender exited 1") == 3
    assert "not analysed (every treatment needs at least 2 successful runs" in md


def test_a_response_without_variation_is_reported_not_failed(tmp_path):
    """A loss of 0 in every run (a rate the path carries): the residual
    variance is zero and F undefined; the analysis says so, lists the cell
    means, and neither crashes nor writes NaN into the JSON."""
    from streamgauge.observe.__main__ import main

    vals = [(fl, rate, rep, 0.0) for fl in ("uninstrumented", "per-packet") for rate in ("1", "2") for rep in range(3)]
    write_runs(tmp_path / "runs.csv", vals)
    out = tmp_path / "a.json"
    assert main(["analyze", str(tmp_path / "runs.csv"), "--out", str(out), "--permutations", "99"]) == 0
    assert "NaN" not in out.read_text()
    assert main(["report", str(out), "--md", str(tmp_path / "r.md")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert "no test (the response has the same value in every run)" in md
    assert md.count("| 0.0 |") + md.count("| 0 |") >= 4
