#!/usr/bin/env bash
# Set up everything and run streamgauge's main job end to end.
#
#   bash scripts/demo.sh
#
# The main job, end to end on the embedded default (SQLite):
#   1. start `streamgauge server` on loopback with a fresh data directory,
#   2. send it the streams that real OML clients (liboml2, captured byte for
#      byte in spec/vectors) sent, binary and text, over TCP,
#   3. show the tables and rows that arrived in <domain>.sq3,
#   4. run an unmodified OML4Py application (examples/python) against it,
#   5. run the real ping through `streamgauge wrap ping` (our client library)
#      into the same server, stop the server with SIGTERM, and export the
#      ping stream to CSV with `streamgauge export`,
#   6. decode a capture to JSON and convert it binary -> text -> JSON, to
#      show the codec on its own.
# Each step is a function listed in main().
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
REF_TXT="$VECTORS/0001-ref-alltypes.txt"
REF_ONEMP="$VECTORS/0002-ref-onemp.bin"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/streamgauge-demo.XXXXXX")"
trap cleanup EXIT

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
    bash "$ROOT/scripts/setup.sh" --demo
}

step_build() {
    banner "build (release)"
    cargo build --release -p streamgauge || die "release build failed (see cargo's errors above)"
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
        # Line 1 is the header, whose content line says binary vs text.
        if cmp -s <(tail -n +2 "$WORK/ref-bin.json") <(tail -n +2 "$WORK/roundtrip.json"); then
            echo "round trip: every tuple decoded from the binary capture and from its text form is identical"
        else
            diff -u "$WORK/ref-bin.json" "$WORK/roundtrip.json" | head -n "$DEMO_LINES" || true
            die "round trip changed some tuples"
        fi
    fi
}

# A free TCP port on loopback.
free_port() {
    local port
    for port in $(shuf -i 20000-40000 -n 50); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free TCP port found"
}

# send FILE to the server, as a client would (bash's /dev/tcp: no extra tool).
send_stream() {
    local file="$1" port="$2"
    echo "\$ (a client sends ${file#"$ROOT"/} to 127.0.0.1:$port)"
    cat "$file" >"/dev/tcp/127.0.0.1/$port" || die "could not send $file to the server"
}

step_server() {
    need_file "$REF_BIN" "reference binary capture"
    need_file "$REF_TXT" "reference text capture"
    need_file "$REF_ONEMP" "reference one-MP capture"
    local port data db
    port="$(free_port)"
    data="$WORK/data"
    mkdir -p "$data"

    banner "collection server on 127.0.0.1:$port, SQLite in $data"
    echo "\$ streamgauge server --bind 127.0.0.1 -l $port -D $data"
    "$BIN" server --bind 127.0.0.1 -l "$port" -D "$data" --logfile "$WORK/server.log" &
    SERVER_PID=$!
    local i
    for i in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        kill -0 "$SERVER_PID" 2>/dev/null || die "server exited early: $(cat "$WORK/server.log")"
        sleep 0.1
    done

    send_stream "$REF_BIN" "$port"
    send_stream "$REF_TXT" "$port"
    send_stream "$REF_ONEMP" "$port"
    sleep 1.5   # rows are committed within a second

    db="$data/vecdomain.sq3"
    [ -f "$db" ] || die "no database was created (server log: $WORK/server.log)"
    banner "what arrived in ${db#"$WORK"/}"
    echo "\$ sqlite3 vecdomain.sq3 'SELECT name FROM sqlite_master WHERE type=\"table\"'"
    sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
    echo
    echo "\$ sqlite3 -header -column vecdomain.sq3 'SELECT * FROM _senders'"
    sqlite3 -header -column "$db" "SELECT * FROM _senders"
    echo
    echo "\$ sqlite3 -header -column vecdomain.sq3 'SELECT oml_sender_id, oml_seq, i32, u32, u64, dbl, str, gid, bol FROM vec_scalars'"
    sqlite3 -header -column "$db" \
        "SELECT oml_sender_id, oml_seq, i32, u32, CASE typeof(u64) WHEN 'blob' THEN '0x' || hex(u64) ELSE u64 END AS u64, dbl, replace(replace(str, char(9), '\\t'), char(10), '\\n') AS str, gid, bol FROM vec_scalars"
    echo "(uint64 values above 2^63-1 are kept exactly as 8-byte big-endian blobs; see docs/storage.md)"
    echo
    echo "\$ sqlite3 -header -column vecdomain.sq3 'SELECT oml_seq, vd, vu64, vb FROM vec_all'"
    sqlite3 -header -column "$db" "SELECT oml_seq, vd, vu64, vb FROM vec_all"
    echo
    local rows
    rows="$(sqlite3 "$db" "SELECT (SELECT count(*) FROM vec_scalars) + (SELECT count(*) FROM vec_all)")"
    [ "$rows" -eq 8 ] || die "expected 8 rows in vec_scalars + vec_all, found $rows"
    echo "all $rows user tuples arrived"

    banner "an unmodified OML4Py application reports to the same server"
    echo "\$ python3 examples/python/oml4py_pinger.py tcp:127.0.0.1:$port 20"
    python3 "$ROOT/examples/python/oml4py_pinger.py" "tcp:127.0.0.1:$port" 20 \
        || die "the OML4Py example client failed"
    sleep 1.5
    echo
    echo "\$ sqlite3 -header -column demo.sq3 'SELECT oml_seq, oml_ts_client, seq, rtt_us, bytes FROM pinger_udp_echo LIMIT 5'"
    sqlite3 -header -column "$data/demo.sq3" \
        "SELECT oml_seq, round(oml_ts_client, 6) AS oml_ts_client, seq, round(rtt_us, 1) AS rtt_us, bytes FROM pinger_udp_echo LIMIT 5"
    rows="$(sqlite3 "$data/demo.sq3" "SELECT count(*) FROM pinger_udp_echo")"
    [ "$rows" -eq 20 ] || die "expected 20 rows from the OML4Py client, found $rows"
    echo "... all $rows samples arrived"

    banner "a legacy tool, unmodified: ping wrapped by our client library"
    echo "\$ streamgauge wrap ping -c 5 -i 0.2 127.0.0.1 --oml-collect tcp://127.0.0.1:$port --oml-domain demo --oml-id node1"
    "$BIN" wrap ping -c 5 -i 0.2 127.0.0.1 --oml-collect "tcp://127.0.0.1:$port" \
        --oml-domain demo --oml-id node1 || die "streamgauge wrap ping failed"
    sleep 1.5
    echo
    echo "\$ sqlite3 -header -column demo.sq3 'SELECT oml_seq, dest, icmp_seq, ttl, rtt_ms FROM ping_rtt'"
    sqlite3 -header -column "$data/demo.sq3" \
        "SELECT oml_seq, dest, icmp_seq, ttl, round(rtt_ms, 3) AS rtt_ms FROM ping_rtt"
    rows="$(sqlite3 "$data/demo.sq3" "SELECT count(*) FROM ping_rtt WHERE rtt_ms > 0")"
    [ "$rows" -eq 5 ] || die "expected 5 ping replies in ping_rtt, found $rows"
    echo "... all $rows replies arrived"

    banner "stop the server (SIGTERM: drain, commit, close)"
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || die "server did not exit cleanly (log: $WORK/server.log)"
    SERVER_PID=""
    tail -n 5 "$WORK/server.log"

    banner "export the ping stream for analysis elsewhere"
    echo "\$ streamgauge export demo.sq3 -t ping_rtt -f csv -o ping_rtt.csv"
    "$BIN" export "$data/demo.sq3" -t ping_rtt -f csv -o "$WORK/ping_rtt.csv" \
        || die "streamgauge export failed"
    head -n 3 "$WORK/ping_rtt.csv"
    rows="$(($(wc -l <"$WORK/ping_rtt.csv") - 1))"
    [ "$rows" -eq 5 ] || die "expected 5 rows in ping_rtt.csv, found $rows"
    echo "... $rows rows (also: -f jsonl, -f parquet, --all -o DIR)"
}

# ---------------------------------------------------------------------------

SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}

main() {
    step_setup
    step_build
    step_server
    step_decode_references
    step_round_trip
    banner "demo finished"
}

main "$@"
