#!/usr/bin/env bash
# Checks the build shape promised in docs/ARCHITECTURE.md:
# - the libraries a user embeds (server, proxy, stores, query, the C
#   library) and the `streamgauge` binary built with --no-default-features
#   do not build the in-line eBPF programs, so they need neither clang nor
#   the libbpf headers;
# - that reduced binary (a production or packaged build) carries no test
#   infrastructure: neither the benchmark harnesses, pgtemp nor testkit;
# - the default binary still has both subcommands (`inline`, `bench`);
# then lints the reduced binary (which also compiles it) with node, npm and
# clang shadowed by stand-ins that fail: a build script that needed Node
# (the manager's web bundle is committed) or the eBPF toolchain would fail
# the step.
set -euo pipefail
cd "$(dirname "$0")/.."

EBPF='^(inline-ebpf|libbpf-sys|libbpf-rs|libbpf-cargo) '
TEST_INFRA='^(benchmarks|pgtemp|testkit) '
status=0

# The names of the packages of a build (normal and build dependencies)
# matching $1.
matching() {
    local pattern="$1"; shift
    cargo tree "$@" -e normal,build --prefix none | grep -E "$pattern" | cut -d' ' -f1 | sort -u || true
}

# Fails the check if the build given by the cargo arguments pulls in a
# package matching $2 ($1 says what it is, $3 what the build does without).
absent() {
    local what="$1" pattern="$2" without="$3"; shift 3
    local found
    found=$(matching "$pattern" "$@")
    if [[ -n "$found" ]]; then
        echo "build shape: $what pulls in $(echo "$found" | tr '\n' ' ')" >&2
        status=1
    else
        echo "build shape: $what $without"
    fi
}

# Fails the check if the default binary lost the package $1 (feature $2).
kept() {
    if [[ -z "$(matching "^$1 " -p streamgauge)" ]]; then
        echo "build shape: the default streamgauge build lost \`$2\` ($1)" >&2
        status=1
    fi
}

for crate in omsp client client-ffi server proxy store query capture; do
    absent "$crate" "$EBPF" "builds without clang/libbpf" -p "$crate"
done
absent "streamgauge --no-default-features" "$EBPF" "builds without clang/libbpf" \
    -p streamgauge --no-default-features
absent "streamgauge --no-default-features" "$TEST_INFRA" "carries no test infrastructure" \
    -p streamgauge --no-default-features
# The default binary must still have them (the features are on by default).
kept inline-ebpf inline
kept benchmarks bench
[[ $status -eq 0 ]] || exit $status
SHADOW="$(mktemp -d)"
trap 'rm -rf "$SHADOW"' EXIT
for tool in node npm npx clang clang-14 llc bpftool; do
    printf '#!/bin/sh\necho "build shape: the reduced build ran %s; it must not need it" >&2\nexit 127\n' "$tool" \
        >"$SHADOW/$tool"
    chmod +x "$SHADOW/$tool"
done
PATH="$SHADOW:$PATH" CLANG="$SHADOW/clang" \
    cargo clippy -p streamgauge --no-default-features --all-targets -- -D warnings
echo "build shape: streamgauge --no-default-features builds without Node and without clang/libbpf"
