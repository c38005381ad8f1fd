#!/usr/bin/env bash
# Aggregate ingest into one PostgreSQL (issue 21): one collection server,
# then two behind HAProxy (TCP mode, the documented deployment), then two
# edge proxies in front of those, each against raw binary COPY of the same rows measured in the same run by
# `streamgauge bench server` (which also checks zero loss: exact row count,
# every client's complete sequence, sampled values).
#
#   bash scripts/bench-scaleout.sh [TUPLES] [CLIENTS]
#
# Defaults: 400000 tuples over 8 clients. Needs root (the throwaway
# PostgreSQL cluster runs as user postgres), PostgreSQL server binaries and
# haproxy (scripts/setup.sh installs both) and a release build
# (cargo build --release -p streamgauge; built if missing). Everything runs
# on 127.0.0.1 and is stopped and deleted at exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TUPLES="${1:-400000}"
CLIENTS="${2:-8}"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/streamgauge"
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -q -p streamgauge)

PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
[ -x "$PGBIN/initdb" ] || { echo "PostgreSQL server binaries missing: run scripts/setup.sh" >&2; exit 1; }
HAPROXY="$(command -v haproxy || echo /usr/sbin/haproxy)"
[ -x "$HAPROXY" ] || { echo "haproxy missing: run scripts/setup.sh" >&2; exit 1; }

WORK="$(mktemp -d /tmp/sg-scaleout.XXXXXX)"
chown postgres:postgres "$WORK"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$1" >&2; return 1
}

PGPORT="$(free_port)"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/data" -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 >"$WORK/initdb.log" 2>&1
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/pg.log" -w \
    -o "-p $PGPORT -k $WORK -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
runuser -u postgres -- "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -qc "CREATE ROLE oml LOGIN CREATEDB" postgres

start_server() { # port
    "$BIN" server -b postgresql --pg-host 127.0.0.1 --pg-port "$PGPORT" --pg-user oml \
        --bind 127.0.0.1 -l "$1" -d -1 --logfile "$WORK/server-$1.log" &
    PIDS+=("$!")
    wait_port "$1"
}

bench() { # title addr
    echo
    echo "=== $1 ==="
    "$BIN" bench server -b postgresql --pg-host 127.0.0.1 --pg-port "$PGPORT" --pg-user oml \
        --addr "$2" -n "$TUPLES" -c "$CLIENTS" --content binary --insert-sample 0
}

S1="$(free_port)"; S2="$(free_port)"; FRONT="$(free_port)"
start_server "$S1"
bench "1 server (direct)" "127.0.0.1:$S1"

start_server "$S2"
cat >"$WORK/haproxy.cfg" <<EOF
global
    maxconn 4096
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
frontend omsp
    bind 127.0.0.1:$FRONT
    default_backend collectors
backend collectors
    balance roundrobin
    server s1 127.0.0.1:$S1 check
    server s2 127.0.0.1:$S2 check
EOF
"$HAPROXY" -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
PIDS+=("$!")
wait_port "$FRONT"
bench "2 servers behind HAProxy (round robin)" "127.0.0.1:$FRONT"

# Edge proxies: two `streamgauge proxy` processes (journal on disk, resumable
# sessions upstream) in front of HAProxy; the clients are split between them
# by a second HAProxy frontend, as edge sites would be.
E1="$(free_port)"; E2="$(free_port)"; EDGE="$(free_port)"
for e in "$E1" "$E2"; do
    mkdir -p "$WORK/journal-$e"
    "$BIN" proxy --bind 127.0.0.1 -l "$e" --upstream "127.0.0.1:$FRONT" -j "$WORK/journal-$e" -c "127.0.0.1:$(free_port)" \
        -d -1 --logfile "$WORK/proxy-$e.log" &
    PIDS+=("$!")
    wait_port "$e"
done
cat >"$WORK/haproxy-edge.cfg" <<EOF2
global
    maxconn 4096
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
frontend edge
    bind 127.0.0.1:$EDGE
    default_backend proxies
backend proxies
    balance roundrobin
    server e1 127.0.0.1:$E1 check
    server e2 127.0.0.1:$E2 check
EOF2
"$HAPROXY" -f "$WORK/haproxy-edge.cfg" -db >"$WORK/haproxy-edge.log" 2>&1 &
PIDS+=("$!")
wait_port "$EDGE"
bench "2 edge proxies -> HAProxy -> 2 servers" "127.0.0.1:$EDGE"
