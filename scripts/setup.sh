#!/usr/bin/env bash
# Install everything streamgauge needs to build, test, fuzz and demo.
#
# Idempotent and non-interactive: every step checks first and only installs
# what is missing, so a second run takes a few seconds.
#
#   bash scripts/setup.sh          everything: build, tests, fuzzing, demo
#   bash scripts/setup.sh --demo   only what scripts/demo.sh needs (build
#                                  the release binary, run the main job)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages needed now (build, codec, CLI) and soon (eBPF inline
# measurement, collection server backends, network tests, passive capture).
# What the demo needs: the release build (C toolchain, clang and the libbpf
# headers for the in-line eBPF programs, libpcap for capture filters) and
# the tools the demo runs (sqlite3, ping).
DEMO_APT_PACKAGES=(
    build-essential pkg-config
    clang llvm libelf-dev zlib1g-dev libbpf-dev linux-libc-dev libpcap-dev
    sqlite3 iputils-ping curl
)

APT_PACKAGES=(
    build-essential pkg-config
    clang llvm libelf-dev zlib1g-dev libbpf-dev bpftool ethtool
    sqlite3 libsqlite3-dev
    postgresql postgresql-client libpq-dev
    iproute2 iperf3 iputils-ping procps tshark jq netcat-openbsd
    linux-libc-dev
    # passive capture: libpcap (filter compiler), nfdump/nfcapd (IPFIX
    # collector in tests), netsniff-ng (trafgen, capture benchmark),
    # tcpdump (benchmark baseline), openssh-server (sftp archive tests),
    # softflowd (the NetFlow-style exporter our ICMP flow records are
    # compared with)
    libpcap-dev nfdump netsniff-ng tcpdump openssh-server openssh-client softflowd
    # manager browser tests: Debian's headless chromium, driven by
    # playwright-core (node and npm: see setup_web)
    chromium fonts-dejavu-core
    poppler-utils  # streamgauge plot tests: pdfinfo and pdftotext read the PDFs it writes
    ruby libpopt-dev  # scaffold tests: the reference oml2-scaffold, popt for generated mains
    haproxy  # scale-out test: HAProxy (TCP mode) in front of two collection servers
    postgresql-15-partman  # --pg-partition: pg_partman for the PostgreSQL 15 above (tests/pg_partition.rs)
)

STEP="start"
REPORTED=0

log() { printf 'setup: %s\n' "$*"; }
die() {
    printf 'setup: FAILED (%s): %s\n' "$STEP" "$*" >&2
    REPORTED=1
    exit 1
}
on_exit() {
    local rc=$?
    if [ "$rc" -ne 0 ] && [ "$REPORTED" -eq 0 ]; then
        printf 'setup: FAILED during step "%s" (exit %s)\n' "$STEP" "$rc" >&2
    fi
}
trap on_exit EXIT

# Run as root, or through sudo when it is there.
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is not installed: run as root"
    SUDO=(sudo -n)
fi

pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

setup_apt() {
    STEP="apt packages"
    command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script expects Debian/Ubuntu"

    local missing=() p
    for p in "$@"; do
        pkg_installed "$p" || missing+=("$p")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        log "apt packages ok"
        return 0
    fi

    log "installing apt packages: ${missing[*]}"
    # Keep tshark's dumpcap non-setuid and never ask about it.
    echo "wireshark-common wireshark-common/install-setuid boolean false" \
        | "${SUDO[@]}" debconf-set-selections \
        || die "debconf-set-selections failed"
    local apt_opts=(-y -q -o DPkg::Lock::Timeout=300
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
    "${SUDO[@]}" apt-get update -q </dev/null >/dev/null || die "apt-get update failed"
    "${SUDO[@]}" apt-get install "${apt_opts[@]}" --no-install-recommends "${missing[@]}" </dev/null \
        || die "apt-get install failed for: ${missing[*]}"

    for p in "${missing[@]}"; do
        pkg_installed "$p" || die "package $p is still not installed"
    done
    log "apt packages ok (installed ${#missing[@]})"
}

setup_rust() {
    STEP="rust toolchains"
    # rustup installs into ~/.cargo/bin; make sure it is on PATH even in a
    # bare environment (CI, cron, sudo).
    if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
        case ":$PATH:" in
            *":${CARGO_HOME:-$HOME/.cargo}/bin:"*) ;;
            *) export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH" ;;
        esac
    fi
    command -v rustup >/dev/null 2>&1 || die "rustup not found (expected in ~/.cargo/bin); install Rust with rustup first"
    command -v cargo >/dev/null 2>&1 || die "cargo not found"

    # Stable with rustfmt and clippy.
    if ! rustup toolchain list | grep -q '^stable'; then
        log "installing stable toolchain"
        rustup toolchain install stable --profile minimal </dev/null || die "rustup toolchain install stable failed"
    fi
    local installed comp need=()
    installed="$(rustup component list --installed --toolchain stable)" || die "rustup component list failed"
    for comp in rustfmt clippy; do
        grep -q "^${comp}" <<<"$installed" || need+=("$comp")
    done
    if [ "${#need[@]}" -gt 0 ]; then
        log "adding stable components: ${need[*]}"
        rustup component add --toolchain stable "${need[@]}" </dev/null || die "rustup component add ${need[*]} failed"
    fi
    log "rust stable ok ($(rustc +stable --version))"
}

setup_rust_fuzz() {
    # Nightly, for cargo-fuzz (sanitizer flags need it).
    STEP="rust nightly"
    if ! rustup toolchain list | grep -q '^nightly'; then
        log "installing nightly toolchain"
        rustup toolchain install nightly --profile minimal </dev/null || die "rustup toolchain install nightly failed"
    fi
    log "rust nightly ok ($(rustc +nightly --version))"

    # cargo-fuzz.
    STEP="cargo-fuzz"
    if ! cargo fuzz --version >/dev/null 2>&1; then
        log "installing cargo-fuzz (first time only, takes a few minutes)"
        cargo install cargo-fuzz --locked </dev/null || die "cargo install cargo-fuzz failed"
        cargo fuzz --version >/dev/null 2>&1 || die "cargo fuzz still not usable after install"
    fi
    log "cargo-fuzz ok ($(cargo fuzz --version))"
}

# Python dependencies, into the machine's python3 (pyenv here; no virtualenv
# needed): oml4py (a real third-party OMSP client, used by
# crates/cli/tests/oml4py*.rs and python/tests), pytest, maturin (builds the
# python/ package), pandas and pyarrow (streamgauge.read and Parquet export),
# psycopg (streamgauge.read from PostgreSQL), moto's server (a real
# S3-compatible server on loopback for the archive tests), scipy, statsmodels
# and matplotlib (streamgauge.observe: ANOVA, Tukey, bootstrap, report plots).
# The demo needs only oml4py (an unmodified OML4Py application reports
# to our server).
DEMO_PY_PACKAGES=(oml4py==2.10.4)
PY_PACKAGES=(oml4py==2.10.4 pytest "maturin>=1.5,<2" "pandas>=1.5" "pyarrow>=12" "psycopg[binary]>=3.1" "moto[server]>=5" "scipy>=1.15" "statsmodels>=0.14" "matplotlib>=3.7")

# setup_python "MODULE, MODULE…" PACKAGE…: installs the packages unless
# every module already imports (with oml4py at the pinned version).
setup_python() {
    STEP="python packages"
    local imports="$1"
    shift
    local py="${PYTHON:-python3}"
    command -v "$py" >/dev/null 2>&1 || die "$py not found (needed for the oml4py demo and tests)"
    if "$py" -c "import $imports, sys; sys.exit(oml4py.__version__ != '2.10.4')" >/dev/null 2>&1; then
        log "python packages ok ($("$py" --version 2>&1))"
        return 0
    fi
    log "installing python packages: $*"
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$py" -m pip install --no-input -q "$@" </dev/null \
        || die "pip install $* failed"
    # pyenv keeps shims per installed command; refresh them if it is there.
    if command -v pyenv >/dev/null 2>&1; then pyenv rehash >/dev/null 2>&1 || true; fi
    "$py" -c "import $imports" >/dev/null 2>&1 || die "$imports still not importable by $py"
    log "python packages ok (installed)"
}

# The manager's front end (crates/manager/web): its npm packages, exactly as
# locked in package-lock.json (`npm ci`, again only when the lock file
# changed), for the browser tests and for scripts/test.sh's check that the
# committed bundle (web/dist, embedded by crates/manager/build.rs) is what
# `npm run build` makes of web/src. Building streamgauge needs none of it.
setup_web() {
    STEP="manager web front end"
    local web="$ROOT/crates/manager/web"
    [ -f "$web/package-lock.json" ] || die "$web/package-lock.json not found"
    # The machine image brings node 20 with its npm; Debian's packages only
    # where there is none (installing Debian's npm beside another node's
    # would conflict with it).
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        log "installing nodejs and npm (Debian)"
        "${SUDO[@]}" apt-get install -y -q -o DPkg::Lock::Timeout=300 --no-install-recommends nodejs npm </dev/null \
            || die "apt-get install nodejs npm failed"
    fi
    command -v npm >/dev/null 2>&1 || die "npm not found"
    local stamp="$web/node_modules/.package-lock.json"
    if [ ! -x "$web/node_modules/.bin/esbuild" ] || [ ! -f "$stamp" ] || [ "$web/package-lock.json" -nt "$stamp" ]; then
        log "npm ci in crates/manager/web"
        (cd "$web" && npm ci --no-audit --no-fund </dev/null) || die "npm ci failed in $web"
    fi
    log "manager web front end toolchain ok ($(cd "$web" && node_modules/.bin/esbuild --version))"
}

# The reference OML suite (liboml2, oml2-server, oml2-proxy-server) built
# from its public source beside this repository (../shared/reference), for
# the live interop tests (crates/client-ffi/tests/reference_live.rs) and the
# benchmarks that measure it in the same run. Its script is idempotent (a
# second call only prints the prefix). Required in CI.
setup_reference() {
    STEP="reference OML suite"
    local script="$ROOT/../shared/reference/build-oml.sh"
    if [ ! -f "$script" ]; then
        [ -z "${CI:-}" ] || die "$script not found (CI needs the reference suite beside the clone)"
        log "reference suite not found at $script: its interop tests will be skipped"
        return 0
    fi
    local prefix
    prefix="$(bash "$script" </dev/null | tail -n 1)" || die "building the reference suite failed"
    log "reference OML suite ok ($prefix)"
}

main() {
    case "${1:-}" in
        --demo)
            setup_apt "${DEMO_APT_PACKAGES[@]}"
            setup_rust
            setup_python "oml4py" "${DEMO_PY_PACKAGES[@]}"
            ;;
        "")
            setup_apt "${DEMO_APT_PACKAGES[@]}" "${APT_PACKAGES[@]}"
            setup_rust
            setup_rust_fuzz
            setup_python "oml4py, pytest, maturin, pandas, pyarrow, psycopg, moto.server, scipy, statsmodels, matplotlib" \
                "${PY_PACKAGES[@]}"
            setup_web
            setup_reference
            ;;
        *) die "unknown argument '$1' (usage: setup.sh [--demo])" ;;
    esac
    STEP="done"
    log "all done"
}

main "$@"
