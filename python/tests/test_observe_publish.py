"""The published study's page is regenerated from the analyses: every
figure it quotes is the analysis's, the doc's summary block is replaced
and nothing around it, and the detectable effect is the inverse of the
power calculation that `observe plan` uses."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from streamgauge.observe.analyze import analyze, write
from streamgauge.observe.design import detectable_effect, power_per_cell
from streamgauge.observe.publish import BEGIN, END, publish

from test_observe_stats import write_runs


def _study(folder, name, effect, seed):
    """A study with a planted effect of `effect` at rate 300 (SD 1 % of the mean)."""
    d = folder / f"study-{name}"
    d.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    vals = [(fl, rate, rep, float(rate) * (1 + effect if fl == "per-packet" and rate == "300" else 1)
             * (1 + rng.normal(0, 0.01)))
            for fl in ("uninstrumented", "per-packet") for rate in ("100", "300") for rep in range(6)]
    write_runs(d / "runs.csv", vals)
    with open(d / "tools.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "component", "metric", "value"])
        for i in range(len(vals)):
            w.writerow([i, "client", "rows_sent", 1000 + i])
    a = analyze(d / "runs.csv", permutations=499, resamples=499)
    write(a, d / "analysis.json")
    return a


def test_page_quotes_the_analysis_and_the_doc_block_is_replaced(tmp_path):
    a = _study(tmp_path, "client", -0.2, 3)
    _study(tmp_path, "capture", 0.0, 4)
    (tmp_path / "machine.tsv").write_text("key\tvalue\ncommit\tdeadbee\ncpus\t2\n")
    (tmp_path / "machine-load.tsv").write_text(
        "study\tstart\tload_start\tend\tload_end\texit\n"
        "client\t2026-11-29T07:30:00Z\t0.41 0.80 1.02\t2026-11-29T07:40:00Z\t1.90 1.50 1.20\t0\n"
        "capture\t2026-11-29T07:41:00Z\t0.62 1.10 1.10\t2026-11-29T07:45:00Z\t1.70 1.40 1.20\t0\n")
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Doc\n\nprose before\n\n{BEGIN}\nstale figures 99 %\n{END}\n\nprose after\n")
    text = publish(tmp_path, tmp_path / "results.md", doc)

    # client comes first (the study order of the doc), then capture
    assert text.index("## Study: client") < text.index("## Study: capture")
    assert "| commit | deadbee |" in text and "0.41 0.80 1.02" in text
    eff = next(e for e in a["responses"][0]["effects"] if e["at"] == {"rate": "300"})
    pct = f"{eff['estimate'] * 100:+.1f} %"
    assert pct.startswith("-19.") or pct.startswith("-20.") or pct.startswith("-21.")
    assert f"| per-packet | rate=300 | {pct} |" in text
    assert "| 1 of 2 |" in text  # the planted cell is named, the other is not
    assert "| uninstrumented | client | rows_sent | 12 | 1 000 |" in text

    d = doc.read_text()
    assert d.startswith("# Doc\n\nprose before\n\n" + BEGIN) and d.endswith(END + "\n\nprose after\n")
    assert "stale figures" not in d and "0.41, 0.62" in d and pct in d

    # a second run replaces the block again, not a second copy
    publish(tmp_path, tmp_path / "results.md", doc)
    assert doc.read_text().count(BEGIN) == 1 and doc.read_text() == d


def test_without_analyses_or_a_block_the_error_says_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="observer-study.sh"):
        publish(tmp_path, tmp_path / "r.md")
    _study(tmp_path, "client", -0.2, 5)
    (tmp_path / "doc.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="results:begin"):
        publish(tmp_path, tmp_path / "r.md", tmp_path / "doc.md")


@pytest.mark.parametrize("n,cv,cells", [(10, 0.03, 4), (5, 0.2, 12), (30, 0.01, 1)])
def test_detectable_effect_inverts_the_power_calculation(n, cv, cells):
    e = detectable_effect(n, cv, 0.8, 0.05, cells)
    assert power_per_cell(n, e, cv, 0.05, cells) == pytest.approx(0.8, abs=1e-4)
    assert power_per_cell(n, e * 0.9, cv, 0.05, cells) < 0.8


def test_the_published_doc_says_what_its_analyses_compute(tmp_path):
    """docs/observer-effect.md and docs/observe/results.md are exactly what
    `publish` makes of the committed analyses: no figure edited by hand,
    none left stale by a re-run."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = tmp_path / "observer-effect.md"
    shutil.copy(root / "docs" / "observer-effect.md", doc)
    publish(root / "docs" / "observe", tmp_path / "results.md", doc)
    assert doc.read_text() == (root / "docs" / "observer-effect.md").read_text()
    assert (tmp_path / "results.md").read_text() == (root / "docs" / "observe" / "results.md").read_text()
