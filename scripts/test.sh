#!/usr/bin/env bash
# Runs recman's whole test suite. Integration tests start real PostgreSQL 15
# clusters (as the postgres OS user when run as root), so setup installs
# PostgreSQL first; no release build is needed.
#
# Usage: sudo scripts/test.sh [extra cargo test args, e.g. -p recman-cli]

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh" --no-build
cd "$ROOT"
setup_s3_server

# Each integration test runs its own clusters; more parallelism than this
# only thrashes a 2-core machine.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}

log_file=$(mktemp /tmp/recman-test.XXXXXX.log)
trap 'rm -f "$log_file"' EXIT

echo "[test] cargo test --workspace $* (RUST_TEST_THREADS=$RUST_TEST_THREADS)"
set +e
cargo test --workspace "$@" 2>&1 | tee "$log_file"
status=${PIPESTATUS[0]}
set -e

echo
echo "[test] summary:"
grep -E '^test result:' "$log_file" || echo "  (no test results)"
awk '/^test result:/ {
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^passed/) p += $(i - 1)
            if ($i ~ /^failed/) f += $(i - 1)
            if ($i ~ /^ignored/) s += $(i - 1)
        }
     }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }' "$log_file"
if [[ $status -ne 0 ]]; then
    echo "[test] cargo test failed (exit $status)" >&2
fi
exit "$status"
