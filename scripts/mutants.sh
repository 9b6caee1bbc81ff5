#!/usr/bin/env bash
# Tests of the tests: breaks recman on purpose, one way at a time, and requires the test that
# guards against that mistake to fail. Mutants that live in the tests themselves (a printer
# that loses tags, a restore that drops a file) are ordinary tests; these ones change product
# code, so they are applied here to the source for one build and put back afterwards.
#
# Usage: sudo scripts/mutants.sh   (CI runs it after scripts/test.sh; needs what test.sh needs)
#
# Each mutant names a file, an exact line to replace and its broken form. When the line is no
# longer in the file (the code moved on), the script fails and says which mutant to update.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh" --no-build
cd "$ROOT"
setup_s3_server
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}

saved=$(mktemp -d /tmp/recman-mutants.XXXXXX)
current=
restore() {
    if [[ -n $current ]]; then
        cp "$saved/original" "$current"
    fi
    rm -rf "$saved"
}
trap restore EXIT

failed=0
# mutant NAME FILE LINE BROKEN TEST-ARGS...
# TEST-ARGS say --workspace rather than -p recman-cli: cargo resolves features over the packages
# it selects, and the workspace's are those scripts/test.sh built, so only what the mutant
# touches is rebuilt.
mutant() {
    local name=$1 file=$2 line=$3 broken=$4
    shift 4
    if [[ $(grep -cF -- "$line" "$file") -ne 1 ]]; then
        echo "[mutants] $name: the line to break is not (once) in $file any more; update scripts/mutants.sh:" >&2
        echo "    $line" >&2
        failed=1
        return
    fi
    cp "$file" "$saved/original"
    current=$file
    LINE=$line BROKEN=$broken perl -0pi -e 's/\Q$ENV{LINE}\E/$ENV{BROKEN}/' "$file"
    local log="$saved/$name.log"
    echo "[mutants] $name: cargo test $* (must fail)"
    set +e
    cargo test "$@" >"$log" 2>&1
    local status=$?
    set -e
    cp "$saved/original" "$file"
    current=
    if [[ $status -eq 0 ]]; then
        echo "[mutants] $name: SURVIVED: the tests passed with recman broken" >&2
        failed=1
    elif ! grep -q '^test result: FAILED' "$log"; then
        echo "[mutants] $name: the mutant did not build or run (exit $status):" >&2
        tail -n 30 "$log" >&2
        failed=1
    else
        echo "[mutants] $name: killed ($(grep -m1 -E "^thread '.*' .*panicked" "$log" || echo 'a test failed'))"
    fi
}

mutant failed-backup-leaves-pieces crates/recman-engine/src/backup.rs \
    'let _ = ctx.repo.remove_prefix(&dir);' 'let _ = &dir;' \
    --workspace --test s3_repo a_flaky_server
mutant throttle-does-nothing crates/recman-engine/src/io/throttle.rs \
    'rate: rate.filter(|r| *r > 0),' 'rate: rate.filter(|_| false),' \
    --workspace --test io_balance rate_is_a_ceiling
mutant uring-refusal-switch-ignored crates/recman-engine/src/fault.rs \
    'is_some_and(|v| v == "1")' 'is_some_and(|_| false)' \
    --workspace --test io_engine refused_io_uring

if [[ $failed -ne 0 ]]; then
    echo "[mutants] FAILED: a guard did not catch its mutant (see above)" >&2
    exit 1
fi
echo "[mutants] every mutant was caught"
