"""python3 -m streamgauge.observe {analyze,report} ...

Exit codes: 0 done; 1 the analysis was written but a response could not be
analysed (too few successful runs); 2 bad input or I/O error."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m streamgauge.observe", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="ANOVA, checks, permutation test, Tukey, bootstrap, allocation of variation")
    a.add_argument("runs", help="runs.csv written by `streamgauge observe run`")
    a.add_argument("--out", required=True, help="analysis JSON to write")
    a.add_argument("--treatment", help="factor whose effect is tested (default: the plan's first factor)")
    a.add_argument("--baseline", help="its reference level (default: its first level)")
    a.add_argument("--alpha", type=float, default=0.05)
    a.add_argument("--permutations", type=int, default=9999)
    a.add_argument("--resamples", type=int, default=9999, help="bootstrap resamples")
    a.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("report", help="HTML and/or Markdown report of an analysis JSON")
    r.add_argument("analysis")
    r.add_argument("--html")
    r.add_argument("--md")
    args = p.parse_args(argv)
    try:
        if args.cmd == "analyze":
            from .analyze import analyze, write

            if args.permutations < 9999:
                print("warning: fewer than 9999 permutations; p-values near alpha are imprecise", file=sys.stderr)
            res = analyze(args.runs, args.treatment, args.baseline, args.alpha, args.permutations, args.resamples, args.seed)
            write(res, args.out)
            for resp in res["responses"]:
                print(resp["verdict"])
            failed = res["design"]["failed_runs"]
            if failed:
                print(f"{len(failed)} failed run(s) excluded; listed in the report", file=sys.stderr)
            if any("error" in r for r in res["responses"]):
                return 1  # written, but a response could not be analysed
        else:
            if not args.html and not args.md:
                p.error("report: give --html and/or --md")
            from .report import write_reports

            write_reports(args.analysis, args.html, args.md)
    except (OSError, ValueError) as e:
        print(f"streamgauge.observe: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
