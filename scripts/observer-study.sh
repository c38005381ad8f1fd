#!/usr/bin/env bash
# The published observer-effect study, end to end, by one command:
#
#   sudo bash scripts/observer-study.sh
#
# builds the release binary and our liboml2 (skipped when SG names a
# binary), runs the five plans of docs/observer-effect.md one after the
# other, each started only when the machine is quiet (1-minute load below
# MAX_LOAD, waiting up to WAIT seconds and recording the load it got),
# then analyses and reports each and regenerates docs/observe/results.md,
# which holds every number the doc quotes. Runs first, analyses after: the
# analyses (9999 permutations and resamples) are CPU work that must not
# overlap a run.
#
# Environment: SG (an existing streamgauge binary: no build), OUT (default
# docs/observe), MAX_LOAD (default 1.0), WAIT (default 900), STUDIES (a
# subset, e.g. "client capture"), PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
    echo "observer-study: the plans use network namespaces and veth pairs: run as root" >&2
    exit 2
fi
OUT=${OUT:-docs/observe}
MAX_LOAD=${MAX_LOAD:-1.0}
WAIT=${WAIT:-900}
STUDIES=${STUDIES:-"client inline capture c-client iperf3"}
PYTHON=${PYTHON:-python3}

if [ -z "${SG:-}" ]; then
    cargo build --release -p streamgauge -p client-ffi
    SG=target/release/streamgauge
fi
[ -x "$SG" ] || { echo "observer-study: $SG is not an executable" >&2; exit 2; }
ref=$(bash ../shared/reference/build-oml.sh 2>/dev/null | tail -1 || true)
[ -n "$ref" ] && export STREAMGAUGE_OML_REFERENCE="$ref"

plan_of() {
    case $1 in
        c-client | iperf3) echo "examples/observe/$1.toml" ;;
        *) echo "examples/observe/study-$1.toml" ;;
    esac
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# Waits until the 1-minute load is below MAX_LOAD (the previous plan's own
# sender and receiver take a minute or two to decay out of it).
wait_quiet() {
    local waited=0
    while awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="$MAX_LOAD" 'BEGIN { exit !(l >= m) }'; do
        if [ "$waited" -ge "$WAIT" ]; then
            echo "observer-study: load still $(load) after ${WAIT}s; running anyway (recorded)" >&2
            return
        fi
        sleep 5
        waited=$((waited + 5))
    done
}

mkdir -p "$OUT"
machine="$OUT/machine.tsv"
printf 'key\tvalue\n' >"$machine"
{
    printf 'commit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf 'binary\t%s\n' "$("$SG" --version)"
    printf 'kernel\t%s\n' "$(uname -r)"
    printf 'cpus\t%s\n' "$(nproc)"
    printf 'cpu\t%s\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    printf 'max_load\t%s\n' "$MAX_LOAD"
} >>"$machine"
loads="$OUT/machine-load.tsv"
printf 'study\tstart\tload_start\tend\tload_end\texit\n' >"$loads"

scratch=$(mktemp -d /tmp/observer-study.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
for s in $STUDIES; do
    plan=$(plan_of "$s")
    [ -f "$plan" ] || { echo "observer-study: no plan $plan" >&2; exit 2; }
    echo "== $s: waiting for load < $MAX_LOAD (now $(load))"
    wait_quiet
    start=$(now) l0=$(load)
    echo "== $s: $plan from $start, load $l0"
    rc=0
    "$SG" observe run "$plan" --out "$scratch/$s" || rc=$?
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$start" "$l0" "$(now)" "$(load)" "$rc" >>"$loads"
    [ "$rc" = 0 ] || echo "observer-study: $s ended with exit $rc (recorded; its failed runs are listed in its report)" >&2
done

for s in $STUDIES; do
    dir="$OUT/study-$s"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$scratch/$s/runs.csv" "$dir/"
    [ -f "$scratch/$s/tools.csv" ] && cp "$scratch/$s/tools.csv" "$dir/"
    echo "== $s: analysis"
    "$SG" observe analyze "$dir/runs.csv" --out "$dir/analysis.json" --python "$PYTHON" || [ $? = 1 ]
    "$SG" observe report "$dir/analysis.json" --html "$dir/report.html" --md "$dir/report.md" --python "$PYTHON"
done
"$PYTHON" -m streamgauge.observe publish "$OUT" --out "$OUT/results.md" --doc docs/observer-effect.md
echo "observer-study: wrote $OUT/results.md and the reports under $OUT/study-*"
