"""python3 -m streamgauge.observe {analyze,report,plan,publish} ...

Exit codes: 0 done; 1 the analysis was written but a response could not be
analysed (too few successful runs); 2 bad input or I/O error."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m streamgauge.observe", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="ANOVA, checks, permutation test within strata, Tukey HSD or Games-Howell, "
                       "effect intervals with Holm-adjusted verdicts, allocation of variation")
    a.add_argument("runs", help="runs.csv written by `streamgauge observe run`")
    a.add_argument("--out", required=True, help="analysis JSON to write")
    a.add_argument("--treatment", help="factor whose effect is tested (default: the plan's first factor)")
    a.add_argument("--baseline", help="its reference level (default: its first level)")
    a.add_argument("--alpha", type=float, default=0.05)
    a.add_argument("--permutations", type=int, default=9999)
    a.add_argument("--resamples", type=int, default=9999,
                   help="bootstrap resamples (BCa intervals, used from 50 runs per cell on)")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--strata", help="comma-separated factors within whose level combinations the permutation ANOVA "
                   "permutes residuals, or 'none' (default: every factor but the treatment)")
    a.add_argument("--adjust", default="holm", choices=["holm", "fdr_bh"],
                   help="multiplicity adjustment of the per-cell verdicts across the cells of a response")
    r = sub.add_parser("report", help="HTML and/or Markdown report of an analysis JSON")
    r.add_argument("analysis")
    r.add_argument("--html")
    r.add_argument("--md")
    d = sub.add_parser("plan", help="replications per cell for a wanted power at a given effect size and noise")
    d.add_argument("--effect", type=float, required=True, help="smallest relative difference to detect (0.05 = 5 %%)")
    d.add_argument("--cv", type=float, required=True,
                   help="within-cell standard deviation as a fraction of the mean (from a pilot run's report)")
    d.add_argument("--power", type=float, default=0.8)
    d.add_argument("--alpha", type=float, default=0.05)
    d.add_argument("--cells", type=int, default=1,
                   help="cells compared to the baseline per response (instrumented levels x other factors' combinations)")
    u = sub.add_parser("publish", help="regenerate the published study's figures (results.md) from its analyses")
    u.add_argument("folder", help="folder holding study-*/analysis.json (and machine.tsv, machine-load.tsv)")
    u.add_argument("--out", required=True, help="Markdown page to write")
    u.add_argument("--doc", help="also replace the <!-- results:begin --> ... <!-- results:end --> block of this file")
    args = p.parse_args(argv)
    try:
        if args.cmd == "analyze":
            from .analyze import analyze, write

            if args.permutations < 9999:
                print("warning: fewer than 9999 permutations; p-values near alpha are imprecise", file=sys.stderr)
            strata = None if args.strata is None else [] if args.strata == "none" else \
                [x.strip() for x in args.strata.split(",") if x.strip()]
            res = analyze(args.runs, args.treatment, args.baseline, args.alpha, args.permutations, args.resamples,
                          args.seed, strata, args.adjust)
            write(res, args.out)
            for resp in res["responses"]:
                print(resp["verdict"])
            failed = res["design"]["failed_runs"]
            if failed:
                print(f"{len(failed)} failed run(s) excluded; listed in the report", file=sys.stderr)
            if any("error" in r for r in res["responses"]):
                return 1  # written, but a response could not be analysed
        elif args.cmd == "plan":
            from .bootstrap import BCA_MIN_N
            from .design import power_per_cell, replications_for

            n = replications_for(args.effect, args.cv, args.power, args.alpha, args.cells)
            print(f"replications = {n}")
            print(f"# {n} runs per cell detect a {abs(args.effect) * 100:g} % difference to the baseline with "
                  f"{power_per_cell(n, args.effect, args.cv, args.alpha, args.cells) * 100:.1f} % power when the "
                  f"within-cell SD is {args.cv * 100:g} % of the mean (two-sided t-test at alpha {args.alpha} / "
                  f"{args.cells} cells, Holm's first step)")
            print(f"# intervals: {'BCa bootstrap' if n >= BCA_MIN_N else 'Fieller-Welch'} "
                  f"(BCa from {BCA_MIN_N} runs per cell on)")
        elif args.cmd == "publish":
            from .publish import publish

            publish(args.folder, args.out, args.doc)
        else:
            if not args.html and not args.md:
                p.error("report: give --html and/or --md")
            from .report import write_reports

            write_reports(args.analysis, args.html, args.md)
    except BrokenPipeError:  # `... plan | head -1`: the reader had what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except (OSError, ValueError) as e:
        print(f"streamgauge.observe: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
