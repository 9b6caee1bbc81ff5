#!/usr/bin/env bash
# Prepares a Debian 12 machine to build and test recman: PostgreSQL 15, a C
# toolchain (bundled SQLite and zstd are compiled from C), Rust, and the
# release build. Safe to re-run: it only installs what is missing.
#
# Usage: scripts/setup.sh [--no-build]
#    or: source scripts/setup.sh [--no-build]   (also leaves cargo on PATH)
# SKIP_BUILD=1 has the same effect as --no-build.
#
# Installing postgresql-15 may create and start Debian's default cluster
# "15/main" on port 5432. It is left alone: demo and tests run their own
# clusters on their own ports and socket dirs.

set -euo pipefail

setup_log() { printf '[setup] %s\n' "$*" >&2; }
setup_die() {
    printf '[setup] ERROR: %s\n' "$*" >&2
    exit 1
}

# Repository root, valid whether this file is run or sourced.
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BINDIR=/usr/lib/postgresql/15/bin

# Debian 12 names. Contrib (amcheck & co) ships inside postgresql-15 there;
# pg_amcheck, pgbench and psql are in postgresql-client-15.
SETUP_PACKAGES=(
    postgresql-15 postgresql-client-15
    gcc libc6-dev pkg-config make ca-certificates curl
    util-linux
    python3
)

setup_as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        setup_die "need root to run: $* (re-run with sudo)"
    fi
}

# Installs those of the named Debian packages that are missing; LABEL names them in messages.
setup_install_missing() {
    local label=$1 missing=() pkg
    shift
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        setup_log "$label present"
        return
    fi
    command -v apt-get >/dev/null 2>&1 || setup_die "missing ${missing[*]} and no apt-get (Debian 12 expected)"
    setup_log "installing $label: ${missing[*]}"
    setup_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    setup_as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

setup_packages() {
    setup_install_missing "system packages" "${SETUP_PACKAGES[@]}"
    [[ -x $PG_BINDIR/initdb ]] || setup_die "$PG_BINDIR/initdb missing after installing postgresql-15"
}

setup_rust() {
    if [[ -x $HOME/.cargo/bin/cargo && :$PATH: != *":$HOME/.cargo/bin:"* ]]; then
        PATH="$HOME/.cargo/bin:$PATH"
        export PATH
    fi
    if command -v cargo >/dev/null 2>&1; then
        setup_log "rust present: $(cargo --version)"
        return
    fi
    setup_log "cargo not found on PATH nor in $HOME/.cargo/bin:"
    setup_log "installing rustup with the stable toolchain (+rustfmt, clippy) into $HOME/.cargo"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
        sh -s -- -y --no-modify-path --profile minimal --default-toolchain stable \
            -c rustfmt -c clippy
    PATH="$HOME/.cargo/bin:$PATH"
    export PATH
    setup_log "installed: $(cargo --version)"
}

setup_build() {
    setup_log "cargo build --release -p recman-cli"
    (cd "$REPO_ROOT" && cargo build --release -p recman-cli)
    [[ -x $REPO_ROOT/target/release/recman ]] || setup_die "build produced no target/release/recman"
    setup_log "built $REPO_ROOT/target/release/recman"
}

setup_main() {
    local build=1 arg
    [[ ${SKIP_BUILD:-0} == 1 ]] && build=0
    for arg in "$@"; do
        case $arg in
            --no-build) build=0 ;;
            *) setup_die "unknown argument: $arg (usage: setup.sh [--no-build])" ;;
        esac
    done
    setup_packages
    setup_rust
    if [[ $build == 1 ]]; then
        setup_build
    fi
}

setup_main "$@"

# The S3 server the tests start (s3s-fs, a small Rust S3 server storing files): built once
# with cargo into a cache outside the checkout, reused by later runs. 0.14.1 is the newest
# release that builds with this machine's rustc. Exports RECMAN_S3S_FS for the tests.
setup_s3_server() {
    local root=${RECMAN_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/recman-tools}
    local bin=$root/bin/s3s-fs
    if [[ ! -x $bin ]] || ! "$bin" --version 2>/dev/null | grep -q '0\.14\.1'; then
        setup_log "building s3s-fs 0.14.1 into $root (once; about 4 minutes)"
        cargo install s3s-fs@0.14.1 --locked --features binary --root "$root" >&2 ||
            setup_die "cannot build s3s-fs; hint: check network access to crates.io"
    fi
    export RECMAN_S3S_FS=$bin
    setup_log "s3 test server: $bin"
}

# Tools of the peer benchmark (bench/peers.sh): pgBackRest, fio and the lz4/zstd command-line
# tools, from Debian's packages. Not part of the default set-up; the benchmark calls it.
setup_bench_tools() {
    setup_install_missing "benchmark tools" pgbackrest fio lz4 zstd
}
