#!/usr/bin/env bash
# Set up everything, then run streamgauge's whole test suite:
#   formatting, clippy, unit/integration/doc tests,
#   the Python package and its pytest suite, the manager's browser tests,
#   fuzz build + short fuzz smoke runs (if fuzz/ exists).
#
#   bash scripts/test.sh
#
# Works from any directory. Non-interactive (fine under CI=true).
# Tunables: TEST_JOBS (test binaries at once, default 2), FUZZ_RUNS
# (default 20000), FUZZ_MAX_TIME seconds (default 30), FUZZ_SEED (default
# 1; 0 lets libFuzzer pick one).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Cargo installed by rustup lives in ~/.cargo/bin; CI environments may not
# have it on PATH.
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
case ":$PATH:" in
    *":$CARGO_BIN:"*) ;;
    *) export PATH="$CARGO_BIN:$PATH" ;;
esac

# Under CI every build is a first build: incremental compilation only adds
# its caches (tens of GB for this workspace) and their writing time.
case "${CI:-}" in
    "" | false | 0) ;;
    *) export CARGO_INCREMENTAL=0 ;;
esac

FUZZ_RUNS="${FUZZ_RUNS:-20000}"
FUZZ_MAX_TIME="${FUZZ_MAX_TIME:-30}"
# A fixed seed makes the smoke runs the same on every run of one commit,
# so a failure here reproduces; searching new inputs is a fuzzing
# campaign's job (fuzz/README.md), not a gate's.
FUZZ_SEED="${FUZZ_SEED:-1}"

RESULTS=()       # one line per finished or skipped step
# Tests that skip for lack of a tool append a line here (crates/testkit,
# python/tests/conftest.py); under CI they fail instead.
SKIP_LOG="$(mktemp "${TMPDIR:-/tmp}/streamgauge-skipped.XXXXXX")"
export STREAMGAUGE_SKIP_LOG="$SKIP_LOG"
CURRENT=""       # step running now (reported as failed if we exit during it)
TMP_DIRS=()
T0=$SECONDS

summary() {
    local rc=$?
    local d
    for d in "${TMP_DIRS[@]}"; do rm -rf "$d"; done
    echo
    echo "==================================================================="
    echo " test.sh summary"
    echo "==================================================================="
    local line
    for line in "${RESULTS[@]}"; do echo "  $line"; done
    if [ -s "$SKIP_LOG" ]; then
        echo "-------------------------------------------------------------------"
        echo " skipped tests ($(sort -u "$SKIP_LOG" | wc -l)): a tool was missing; under CI=true these fail"
        sort -u "$SKIP_LOG" | sed 's/^/  /'
    fi
    rm -f "$SKIP_LOG"
    if [ -s "${TEST_LOG:-}" ]; then
        echo "-------------------------------------------------------------------"
        echo " slowest tests (cargo test, seconds)"
        # awk reads all of sort's output: a `head` here would close the pipe
        # early, and under pipefail sort's SIGPIPE (141) would end this
        # summary, and the script, with that status.
        sed -n 's/^test \(.*\) \.\.\. [a-zA-Z]* <\([0-9.]*\)s>$/\2 \1/p' "$TEST_LOG" \
            | sort -rn | awk 'NR <= 20 {printf "  %8.1f  %s\n", $1, $2}' || true
        rm -f "$TEST_LOG"
    fi
    if [ "$rc" -ne 0 ]; then
        if [ -n "$CURRENT" ]; then
            echo "  FAILED   $CURRENT"
        fi
        echo "-------------------------------------------------------------------"
        echo " RESULT: FAILED (exit $rc) after $((SECONDS - T0))s"
    else
        echo "-------------------------------------------------------------------"
        echo " RESULT: OK after $((SECONDS - T0))s"
    fi
    exit "$rc"
}
trap summary EXIT

banner() {
    echo
    echo "==================================================================="
    echo "== $*"
    echo "==================================================================="
}

# step NAME CMD...: run CMD with a banner; record ok + duration. If CMD fails,
# set -e ends the script and the summary reports NAME as failed.
step() {
    local name="$1"
    shift
    banner "$name"
    CURRENT="$name"
    local start=$SECONDS
    "$@"
    CURRENT=""
    RESULTS+=("$(printf 'ok       %-28s %4ss' "$name" "$((SECONDS - start))")")
}

skip() {
    local name="$1" why="$2"
    banner "$name: skipped ($why)"
    RESULTS+=("$(printf 'skipped  %-28s (%s)' "$name" "$why")")
}

fuzz_smoke() {
    local list
    list="$(cargo +nightly fuzz list)"
    local targets=()
    mapfile -t targets < <(printf '%s\n' "$list" | sed '/^[[:space:]]*$/d')
    if [ "${#targets[@]}" -eq 0 ]; then
        echo "no fuzz targets listed by 'cargo +nightly fuzz list'"
        return 0
    fi
    local t corpus seeds
    for t in "${targets[@]}"; do
        echo
        echo "--- fuzz smoke: $t (-runs=$FUZZ_RUNS -max_total_time=$FUZZ_MAX_TIME -seed=$FUZZ_SEED)"
        # A fresh corpus dir first (libFuzzer writes new inputs there), the
        # repo's seeds second (read only, so they stay unchanged).
        corpus="$(mktemp -d "${TMPDIR:-/tmp}/streamgauge-fuzz-$t.XXXXXX")"
        TMP_DIRS+=("$corpus")
        local args=("$corpus")
        seeds="$ROOT/fuzz/seeds/$t"
        if [ -d "$seeds" ]; then
            args+=("$seeds")
        fi
        cargo +nightly fuzz run "$t" "${args[@]}" -- \
            -runs="$FUZZ_RUNS" -max_total_time="$FUZZ_MAX_TIME" -seed="$FUZZ_SEED"
    done
}

step "setup" bash "$ROOT/scripts/setup.sh"
step "cargo fmt --check" cargo fmt --all -- --check
step "rust-version check" python3 "$ROOT/scripts/check-msrv.py"
step "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
# The manager's web bundle is committed (so that building needs no Node);
# it must be exactly what `npm run build` makes of web/src.
web_bundle_reproducible() {
    npm --prefix "$ROOT/crates/manager/web" run build </dev/null
    local changed
    changed="$(git -C "$ROOT" status --porcelain -- crates/manager/web/dist)"
    if [ -n "$changed" ]; then
        echo "crates/manager/web/dist differs from what \`npm run build\` makes of web/src:" >&2
        echo "$changed" >&2
        echo "run \`npm --prefix crates/manager/web run build\` and commit crates/manager/web/dist" >&2
        return 1
    fi
    echo "web bundle: committed dist/ is byte for byte the build of web/src"
}
step "web bundle reproducible" web_bundle_reproducible
step "build without eBPF toolchain" bash "$ROOT/scripts/check-build-shape.sh"
# The Python package (python/): built and installed into the machine's
# python3 with maturin through pip, before the Rust tests, some of which
# run Python programs that import it (the scaffold's generated modules).
# A fresh machine has no copy of it; a machine that has one would hide the
# wrong order.
# Built with the dev profile (MATURIN_PEP517_ARGS), like the Rust tests:
# an optimised build of its dependencies here cost minutes and tested
# nothing the debug build does not.
python_install() {
    MATURIN_PEP517_ARGS="--profile dev" PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        python3 -m pip install --no-input -q --force-reinstall --no-deps "$ROOT/python" </dev/null
}
step "pip install ./python" python_install
# The test binaries run two at a time (scripts/test-binaries.py): most
# tests wait on servers, timeouts and child processes, and cargo test,
# running the 200 binaries one after the other, left the 2 cores half idle
# (493 s for 266 s of CPU; two at a time 254 s, three 197 s, but with
# more tests competing for the cores than they were written for). Each
# binary still runs as cargo runs it.
# Every binary runs even when one fails, so one run reports all that is
# wrong. --report-time (libtest's per-test timing) feeds the summary's
# slowest tests; the runner sets RUSTC_BOOTSTRAP=1, which the stable
# harness needs for it, for the test binaries only (for cargo, build
# scripts would rerun and a warm run rebuild most of the workspace).
# Three binaries run alone, before the others: they check throughput or
# loss of a real workload (inline_bench compares the in-line probes'
# phases, flavours expects iperf3 near-lossless at 4000 datagrams/s over
# a veth pair, bench_observer a lossless sender), which another binary's
# load skews: iperf3 lost 8 % beside two other binaries on 2 cores.
# Doctests run apart, through cargo. Examples are compiled by clippy above.
TEST_LOG="$(mktemp "${TMPDIR:-/tmp}/streamgauge-cargo-test.XXXXXX")"
cargo_test() {
    local status=0
    python3 "$ROOT/scripts/test-binaries.py" --jobs "${TEST_JOBS:-2}" \
        --alone inline_bench --alone flavours --alone bench_observer \
        --workspace --lib --bins --tests -- -Zunstable-options --report-time \
        2>&1 | tee "$TEST_LOG"
    status=${PIPESTATUS[0]}
    cargo test --workspace --no-fail-fast --doc 2>&1 | tee -a "$TEST_LOG"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
    return "$status"
}
step "cargo test" cargo_test
# One build serves every test: the Python suite and the browser tests
# drive the debug `streamgauge` binary that `cargo test` built (the release
# build, a whole second optimised build of the workspace, is the demo's:
# scripts/demo.sh).
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/streamgauge"

# The Python package's pytest suite drives that binary (STREAMGAUGE_BIN)
# and real ping/iperf3.
step "pytest python/tests" env STREAMGAUGE_BIN="$BIN" python3 -m pytest -q "$ROOT/python/tests"

# The manager's web front end in headless Chromium (crates/manager/web/test,
# node's test runner with playwright-core), against the binary's real
# manager, collection server and capture daemon (on a veth pair in a
# namespace the tests create and delete).
step "browser tests (manager web)" env STREAMGAUGE_BIN="$BIN" \
    npm --prefix "$ROOT/crates/manager/web" test

# Benches are not built again here: `cargo clippy --all-targets` above
# type-checks every bench target, and building them in the bench profile
# cost a whole optimised build of the workspace (about nine minutes).

if [ -f "$ROOT/fuzz/Cargo.toml" ]; then
    step "cargo fuzz build" cargo +nightly fuzz build
    step "cargo fuzz smoke runs" fuzz_smoke
else
    skip "cargo fuzz" "no fuzz/Cargo.toml"
fi
