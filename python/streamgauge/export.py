"""``python -m streamgauge export DB --table T --format csv|parquet -o FILE``."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="streamgauge-export",
        description="Export a stream (table) of an experiment database to CSV or Parquet.",
    )
    p.add_argument("db", help="SQLite file (<domain>.sq3) or PostgreSQL connection string")
    p.add_argument("--table", "-t", required=True, help="table to export (<app>_<mp>)")
    p.add_argument("--format", "-f", choices=["csv", "parquet"], default=None,
                   help="output format (default: from the output file's extension, else csv)")
    p.add_argument("--output", "-o", required=True, help="output file; - for standard output (csv only)")
    p.add_argument("--raw-timestamps", action="store_true",
                   help="keep oml_ts_* as seconds since the experiment start")
    a = p.parse_args(argv)
    fmt = a.format or ("parquet" if a.output.endswith(".parquet") else "csv")
    from .reader import read

    try:
        df = read(a.db, a.table, raw_timestamps=a.raw_timestamps)
    except (KeyError, FileNotFoundError) as e:
        print(f"streamgauge-export: error: {e}", file=sys.stderr)
        return 2
    if fmt == "csv":
        df.to_csv(sys.stdout if a.output == "-" else a.output, index=False)
    else:
        if a.output == "-":
            print("streamgauge-export: error: parquet needs an output file", file=sys.stderr)
            return 2
        try:
            df.to_parquet(a.output, index=False)
        except ImportError as e:
            print(f"streamgauge-export: error: {e} (pip install pyarrow)", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
