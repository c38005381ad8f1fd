"""``python -m streamgauge export ...``."""

import sys

from .export import main as _export

USAGE = "usage: python -m streamgauge export DB --table T [--format csv|parquet] -o FILE"

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "export":
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    sys.exit(_export(sys.argv[2:]))
