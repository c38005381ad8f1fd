#!/usr/bin/env bash
# Checks the build shape promised in docs/ARCHITECTURE.md: the libraries a
# user embeds (server, proxy, stores, query, the C library) and the
# `streamgauge` binary built with --no-default-features do not build the
# in-line eBPF programs, so they need neither clang nor the libbpf
# headers; then lints that reduced binary (which also compiles it).
set -euo pipefail
cd "$(dirname "$0")/.."

EBPF='^(inline-ebpf|libbpf-sys|libbpf-rs|libbpf-cargo) '
status=0
check() {
    local what="$1"; shift
    local found
    found=$(cargo tree "$@" -e normal,build --prefix none | grep -E "$EBPF" | sort -u || true)
    if [[ -n "$found" ]]; then
        echo "build shape: $what pulls in the eBPF toolchain: $(echo "$found" | tr '\n' ' ')" >&2
        status=1
    else
        echo "build shape: $what builds without clang/libbpf"
    fi
}
for crate in omsp client client-ffi server proxy store query capture; do
    check "$crate" -p "$crate"
done
check "streamgauge --no-default-features" -p streamgauge --no-default-features
# The default binary must still have it (the feature is on by default).
if ! cargo tree -p streamgauge -e normal,build --prefix none | grep -qE '^inline-ebpf '; then
    echo "build shape: the default streamgauge build lost in-line measurement" >&2
    status=1
fi
[[ $status -eq 0 ]] || exit $status
cargo clippy -p streamgauge --no-default-features --all-targets -- -D warnings
