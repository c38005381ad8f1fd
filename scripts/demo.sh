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
#      show the codec on its own,
#   7. read the same data back through the server's HTTP query API, and
#      show it in the manager's web front end: an experiment whose streams
#      are plotted, with the URL and the generated admin password printed.
# Each step is a function listed in main().
#
#   bash scripts/demo.sh [--no-serve] [--release]
#
# Works from any directory. Run from a terminal, it keeps the server and
# the manager serving until Ctrl-C; under CI=true, without a terminal or
# with --no-serve it checks that the pages answer and stops (SIGTERM:
# drain, commit, close). It builds the debug binary (quicker to build; the
# demo's data are small); --release builds and runs the optimised one.
# DEMO_LINES sets how many lines of each output are shown (default 15).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
case ":$PATH:" in
    *":$CARGO_BIN:"*) ;;
    *) export PATH="$CARGO_BIN:$PATH" ;;
esac

DEMO_LINES="${DEMO_LINES:-15}"
SERVE=1
PROFILE=debug
for arg in "$@"; do
    case "$arg" in
        --no-serve) SERVE=0 ;;
        --release) PROFILE=release ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "demo: unknown argument '$arg' (usage: demo.sh [--no-serve] [--release])" >&2; exit 2 ;;
    esac
done
if [ -n "${CI:-}" ] && [ "${CI}" != "false" ] && [ "${CI}" != "0" ]; then SERVE=0; fi
[ -t 0 ] && [ -t 1 ] || SERVE=0
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# STREAMGAUGE_BIN: run the demo with that binary instead of building one.
BIN="${STREAMGAUGE_BIN:-$TARGET_DIR/$PROFILE/streamgauge}"
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
    if [ -n "${STREAMGAUGE_BIN:-}" ]; then
        [ -x "$BIN" ] || die "STREAMGAUGE_BIN=$BIN is not an executable"
        return 0
    fi
    # The demo's streams are a few hundred rows: the debug binary shows
    # the same product and builds in about half the time of an optimised
    # one (--release builds that, as a user installs it).
    if [ "$PROFILE" = release ]; then
        banner "build (release)"
        cargo build --release -p streamgauge || die "release build failed (see cargo's errors above)"
    else
        banner "build (debug; --release for the optimised binary)"
        cargo build -p streamgauge || die "build failed (see cargo's errors above)"
    fi
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

# A free TCP port on loopback: nothing listens there, and it lies below the
# kernel's ephemeral range (32768 and up), where a client's outgoing
# connection may hold it.
free_port() {
    local port
    for port in $(shuf -i 20000-32000 -n 50); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free TCP port found"
}

# wait_port PORT PID LOG: wait until PORT on loopback accepts, or die if PID
# exited (showing LOG).
wait_port() {
    local port="$1" pid="$2" log="$3" i
    for i in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || die "a service exited early: $(cat "$log")"
        sleep 0.1
    done
    die "nothing listens on 127.0.0.1:$port after 10 s (log: $log)"
}

# json EXPR: evaluates a Python expression over the JSON document on stdin
# (bound to d) and prints the result.
json() {
    python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

# api METHOD PATH [BODY]: the manager's API with the demo's browser session
# (cookie and CSRF token, as the web front end sends them).
api() {
    local method="$1" path="$2" body="${3:-}"
    local args=(-sS --fail-with-body -b "$WORK/cookies" -X "$method" -H "X-CSRF-Token: $CSRF")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' -d "$body")
    curl "${args[@]}" "$MANAGER_URL/api/v1$path"
}

# The manager, with a generated admin password, the collection server as a
# device and an experiment whose domain is the one the demo's clients use.
start_manager() {
    local port
    port="$(free_port)"
    MANAGER_URL="http://127.0.0.1:$port"
    ADMIN_PASSWORD="$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')"
    banner "the manager on $MANAGER_URL"
    echo "\$ STREAMGAUGE_ADMIN_PASSWORD=… streamgauge manager --listen 127.0.0.1:$port --data-dir $WORK/manager"
    STREAMGAUGE_ADMIN_PASSWORD="$ADMIN_PASSWORD" "$BIN" manager --listen "127.0.0.1:$port" \
        --data-dir "$WORK/manager" >"$WORK/manager.log" 2>&1 &
    MANAGER_PID=$!
    wait_port "$port" "$MANAGER_PID" "$WORK/manager.log"
    CSRF="$(curl -sS --fail-with-body -c "$WORK/cookies" -H 'Content-Type: application/json' \
        -d "{\"username\":\"admin\",\"password\":\"$ADMIN_PASSWORD\"}" "$MANAGER_URL/api/v1/login" \
        | json 'd["csrf_token"]')" || die "cannot log in to the manager (log: $WORK/manager.log)"
    local collector
    collector="$(api POST /devices "{\"name\":\"collector\",\"kind\":\"collector\",\"hostname\":\"127.0.0.1\",\"port\":$HTTP_PORT}" \
        | json 'd["id"]')" || die "cannot add the collection server as a device"
    EXPERIMENT="$(api POST /experiments "{\"name\":\"demo\",\"domain\":\"demo\",\"collector\":$collector,\"description\":\"scripts/demo.sh: OML4Py and ping into the collection server\"}" \
        | json 'd["id"]')" || die "cannot create the experiment"
    echo "admin logged in; device 'collector' (127.0.0.1:$HTTP_PORT) and experiment 'demo' (domain demo) created"
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
    OMSP_PORT="$port"
    data="$WORK/data"
    mkdir -p "$data"

    HTTP_PORT="$(free_port)"
    banner "collection server on 127.0.0.1:$port (OMSP) and :$HTTP_PORT (query API), SQLite in $data"
    echo "\$ streamgauge server --bind 127.0.0.1 -l $port -D $data --http 127.0.0.1:$HTTP_PORT"
    "$BIN" server --bind 127.0.0.1 -l "$port" -D "$data" --http "127.0.0.1:$HTTP_PORT" \
        --logfile "$WORK/server.log" &
    SERVER_PID=$!
    wait_port "$port" "$SERVER_PID" "$WORK/server.log"
    wait_port "$HTTP_PORT" "$SERVER_PID" "$WORK/server.log"
    start_manager

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

    banner "export the ping stream for analysis elsewhere"
    echo "\$ streamgauge export demo.sq3 -t ping_rtt -f csv -o ping_rtt.csv"
    "$BIN" export "$data/demo.sq3" -t ping_rtt -f csv -o "$WORK/ping_rtt.csv" \
        || die "streamgauge export failed"
    head -n 3 "$WORK/ping_rtt.csv"
    rows="$(($(wc -l <"$WORK/ping_rtt.csv") - 1))"
    [ "$rows" -eq 5 ] || die "expected 5 rows in ping_rtt.csv, found $rows"
    echo "... $rows rows (also: -f jsonl, -f parquet, --all -o DIR)"
}


step_query_api() {
    banner "the same data through the server's HTTP query API"
    local q="http://127.0.0.1:$HTTP_PORT/api/v1"
    echo "\$ curl $q/domains"
    curl -sS --fail-with-body "$q/domains" || die "query API: GET /domains failed"
    echo
    echo "\$ curl '$q/domains/demo/streams/ping_rtt/rows?format=csv&fields=oml_seq,icmp_seq,rtt_ms'"
    curl -sS --fail-with-body "$q/domains/demo/streams/ping_rtt/rows?format=csv&fields=oml_seq,icmp_seq,rtt_ms" \
        >"$WORK/rows.csv" || die "query API: rows of ping_rtt failed"
    show "$WORK/rows.csv"
    local rows
    rows="$(($(wc -l <"$WORK/rows.csv") - 1))"
    [ "$rows" -eq 5 ] || die "expected 5 rows of ping_rtt from the query API, found $rows"
}

step_manager() {
    banner "the demo's data in the manager's web front end"
    local plots="$MANAGER_URL/experiments/$EXPERIMENT/plots"
    local page streams
    page="$(curl -sS --fail-with-body "$plots")" || die "the manager's page $plots does not answer"
    grep -q '<script' <<<"$page" || die "the manager's page $plots is not the web front end"
    streams="$(api GET "/experiments/$EXPERIMENT/streams" | json '" ".join(sorted(s["name"] for s in d))')" \
        || die "the manager cannot list the experiment's streams"
    echo "experiment 'demo' shows the streams: $streams"
    grep -qw ping_rtt <<<"$streams" || die "ping_rtt is missing from the experiment's streams"
    api GET "/experiments/$EXPERIMENT/query/streams/ping_rtt/rows?points=100" >/dev/null \
        || die "the manager cannot read ping_rtt through its query relay"
    echo "the pages answer, and the plots read ping_rtt through the manager"
    echo
    echo "  open     $plots"
    echo "  user     admin"
    echo "  password $ADMIN_PASSWORD"
    if [ "$SERVE" -eq 1 ]; then
        echo
        echo "serving until Ctrl-C (the collection server keeps accepting on 127.0.0.1:$OMSP_PORT)"
        trap 'echo; echo "Ctrl-C: stopping"' INT
        wait "$MANAGER_PID" 2>/dev/null || true
        trap - INT
    fi
}

step_stop() {
    banner "stop the server and the manager (SIGTERM: drain, commit, close)"
    kill -TERM "$MANAGER_PID" 2>/dev/null || true
    wait "$MANAGER_PID" 2>/dev/null || true
    MANAGER_PID=""
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || die "server did not exit cleanly (log: $WORK/server.log)"
    SERVER_PID=""
    tail -n 5 "$WORK/server.log"
}

# ---------------------------------------------------------------------------

SERVER_PID=""
MANAGER_PID=""
cleanup() {
    [ -n "$MANAGER_PID" ] && kill "$MANAGER_PID" 2>/dev/null
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}

main() {
    DEMO_T0=$SECONDS
    step_setup
    step_build
    step_server
    step_query_api
    step_decode_references
    step_round_trip
    step_manager
    step_stop
    banner "demo finished in $((SECONDS - DEMO_T0)) s"
}

main "$@"
