#!/usr/bin/env bash
# Runs recman's whole test suite. Integration tests start real PostgreSQL 15
# clusters (as the postgres OS user when run as root), so setup installs
# PostgreSQL first; no release build is needed.
#
# Usage: sudo scripts/test.sh [extra cargo test args, e.g. -p recman-cli]
#
# A test whose prerequisite is missing fails; RECMAN_TEST_SKIP=s3,io_uring,... skips those
# by name instead, and the summary counts them (docs/testing.md lists the names).

set -euo pipefail
# Root is needed (packages, clusters run as the postgres OS user): a user with sudo is taken
# there; a root shell, which may have no sudo, runs on as it is.
if [[ $EUID -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
    exec sudo -E "$0" "$@"
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh" --no-build
cd "$ROOT"
if [[ ",${RECMAN_TEST_SKIP:-}," != *,s3,* ]]; then
    setup_s3_server
fi
if [[ ",${RECMAN_TEST_SKIP:-}," != *,azure,* ]]; then
    setup_azurite
fi

# Each integration test runs its own clusters; more parallelism than this
# only thrashes a 2-core machine.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}

log_file=$(mktemp /tmp/recman-test.XXXXXX.log)
trap 'rm -f "$log_file"' EXIT

# The whole workspace, unless the arguments name packages (cargo would otherwise run every
# member anyway: --workspace wins over -p).
scope=(--workspace)
for arg in "$@"; do
    case $arg in
    -p | -p* | --package | --package=*) scope=() ;;
    esac
done
echo "[test] cargo test ${scope[*]} --no-fail-fast $* (RUST_TEST_THREADS=$RUST_TEST_THREADS${RECMAN_TEST_SKIP:+, RECMAN_TEST_SKIP=$RECMAN_TEST_SKIP})"
set +e
# --no-fail-fast: one failing test binary must not hide the results of the others.
cargo test "${scope[@]}" --no-fail-fast "$@" 2>&1 | tee "$log_file"
status=${PIPESTATUS[0]}
set -e

echo
echo "[test] summary:"
grep -E '^test result:' "$log_file" || echo "  (no test results)"
# A test skipped by name through RECMAN_TEST_SKIP passes in cargo's count but writes one
# `SKIPPED(name): reason` line (tests/common, recman_media::testkit::skip); the line may share
# a line of the log with cargo's own `test x ... ` prefix, hence -o rather than an anchor.
skip_lines=$(grep -oE 'SKIPPED\([a-z0-9_]+\): .*' "$log_file" || true)
if [[ -n $skip_lines ]]; then
    echo "[test] skipped by RECMAN_TEST_SKIP (name: count, first reason):"
    awk '{
            name = $1; sub(/^SKIPPED\(/, "", name); sub(/\):$/, "", name)
            n[name]++
            if (!(name in why)) { r = $0; sub(/^[^ ]+ /, "", r); why[name] = r }
         }
         END { for (k in n) printf "  %s: %d (%s)\n", k, n[k], why[k] }' <<<"$skip_lines" | sort
fi
opt_out=$(grep -c . <<<"$skip_lines" || true)
[[ -n $skip_lines ]] || opt_out=0
awk -v opt_out="$opt_out" '/^test result:/ {
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^passed/) p += $(i - 1)
            if ($i ~ /^failed/) f += $(i - 1)
            if ($i ~ /^ignored/) ig += $(i - 1)
        }
     }
     END {
        if (ig > 0) printf "[test] #[ignore]d: %d\n", ig
        printf "total: %d passed, %d failed, %d skipped\n", p - opt_out, f, ig + opt_out
     }' "$log_file"
if [[ $status -ne 0 ]]; then
    echo "[test] cargo test failed (exit $status)" >&2
fi
exit "$status"
