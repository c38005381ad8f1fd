#!/usr/bin/env bash
# Set up everything and run streamgauge's main job end to end.
#
#   bash scripts/demo.sh
#
# Today the main job is the OMSP codec through the CLI:
#   1. decode the reference captures (binary and text) to JSON,
#   2. convert the binary capture to OMSP text and decode that again from
#      stdin, to show the round trip.
# Each step is a function; later steps (collection server into SQLite, the
# default embedded backend, then clients, proxy, ...) are added the same way
# and listed in main().
#
# Works from any directory. Non-interactive. DEMO_LINES sets how many lines
# of each output are shown (default 15).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
case ":$PATH:" in
    *":$CARGO_BIN:"*) ;;
    *) export PATH="$CARGO_BIN:$PATH" ;;
esac

DEMO_LINES="${DEMO_LINES:-15}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET_DIR/release/streamgauge"
VECTORS="$ROOT/spec/vectors"
REF_BIN="$VECTORS/0001-ref-alltypes.bin"
REF_TXT="$VECTORS/0002-ref-alltypes.txt"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/streamgauge-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

banner() {
    echo
    echo "==================================================================="
    echo "== $*"
    echo "==================================================================="
}

die() {
    echo "demo: FAILED: $*" >&2
    exit 1
}

# show FILE: print the first DEMO_LINES lines of FILE and how many were cut.
show() {
    local file="$1" total
    total="$(wc -l <"$file")"
    head -n "$DEMO_LINES" "$file"
    if [ "$total" -gt "$DEMO_LINES" ]; then
        echo "... ($total lines in all, first $DEMO_LINES shown)"
    fi
}

need_file() {
    [ -f "$1" ] || die "$2 not found: $1"
}

# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------

step_setup() {
    banner "setup"
    bash "$ROOT/scripts/setup.sh"
}

step_build() {
    banner "build (release)"
    cargo build --workspace --release || die "release build failed (see cargo's errors above)"
    [ -x "$BIN" ] || die "binary not built: $BIN (does crates/cli build a binary named 'streamgauge'?)"
}

# decode FILE to JSON and show the first lines.
decode_to_json() {
    local input="$1" out="$2"
    echo "\$ streamgauge decode ${input#"$ROOT"/}"
    "$BIN" decode "$input" >"$out" || die "streamgauge decode $input failed"
    show "$out"
}

step_decode_references() {
    need_file "$REF_BIN" "reference binary capture"
    need_file "$REF_TXT" "reference text capture"

    banner "decode reference binary capture -> JSON"
    decode_to_json "$REF_BIN" "$WORK/ref-bin.json"

    banner "decode reference text capture -> JSON"
    decode_to_json "$REF_TXT" "$WORK/ref-txt.json"
}

step_round_trip() {
    need_file "$REF_BIN" "reference binary capture"

    banner "round trip: binary -> OMSP text -> JSON (from stdin)"
    echo "\$ streamgauge decode --text ${REF_BIN#"$ROOT"/}"
    "$BIN" decode --text "$REF_BIN" >"$WORK/roundtrip.txt" \
        || die "streamgauge decode --text $REF_BIN failed"
    show "$WORK/roundtrip.txt"

    echo
    echo "\$ streamgauge decode - < (the text above)"
    "$BIN" decode - <"$WORK/roundtrip.txt" >"$WORK/roundtrip.json" \
        || die "streamgauge decode - (text from stdin) failed"
    show "$WORK/roundtrip.json"

    echo
    if [ -f "$WORK/ref-bin.json" ]; then
        if cmp -s "$WORK/ref-bin.json" "$WORK/roundtrip.json"; then
            echo "round trip: JSON from the binary capture and from its text form are identical"
        else
            echo "round trip: JSON from the binary capture and from its text form differ:"
            diff -u "$WORK/ref-bin.json" "$WORK/roundtrip.json" | head -n "$DEMO_LINES" || true
        fi
    fi
}

# ---------------------------------------------------------------------------

main() {
    step_setup
    step_build
    step_decode_references
    step_round_trip
    banner "demo finished"
}

main "$@"
