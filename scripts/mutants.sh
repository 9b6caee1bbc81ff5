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
# mutant NAME FILE LINE BROKEN TEST CARGO-TEST-ARGS...
# TEST is the test that must fail (its name as libtest prints it); the mutant counts as caught
# only when that test fails, so a flaky or unrelated failure does not pass for a kill. The
# arguments run that one test (`--exact`) and say --workspace rather than -p: cargo resolves
# features over the packages it selects, and the workspace's are those scripts/test.sh built,
# so only what the mutant touches is rebuilt.
mutant() {
    local name=$1 file=$2 line=$3 broken=$4 test=$5
    shift 5
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
    echo "[mutants] $name: cargo test $* -- --exact $test (must fail)"
    set +e
    cargo test "$@" -- --exact "$test" >"$log" 2>&1
    local status=$?
    set -e
    cp "$saved/original" "$file"
    current=
    if [[ $status -eq 0 ]]; then
        echo "[mutants] $name: SURVIVED: $test passed with recman broken" >&2
        failed=1
    elif ! grep -qF "test $test ... FAILED" "$log"; then
        echo "[mutants] $name: $test did not fail (exit $status; a build error or another failure does not count):" >&2
        tail -n 30 "$log" >&2
        failed=1
    else
        echo "[mutants] $name: killed by $test ($(grep -m1 -E "^thread '.*' .*panicked" "$log" || echo 'it failed'))"
    fi
}

# Backup: a failed backup removes the pieces it wrote.
mutant failed-backup-leaves-pieces crates/recman-engine/src/backup.rs \
    'let _ = ctx.repo.remove_prefix(dir);' 'let _ = dir;' \
    a_flaky_server_does_not_fail_the_backup_and_a_permanent_error_is_clean \
    --workspace --test s3_repo
# The I/O engine: RATE paces reads (the schedule itself, not a measured speed).
mutant throttle-does-nothing crates/recman-engine/src/io/throttle.rs \
    'rate: rate.filter(|r| *r > 0),' 'rate: rate.filter(|_| false),' \
    io::throttle::tests::the_schedule_is_bytes_over_rate \
    --workspace --lib
# Restore: the write-mode choice keeps direct writes unless buffered ones win clearly.
mutant restore-never-changes-way crates/recman-engine/src/adapt.rs \
    '&& c < l * HYSTERESIS' '&& c < l * HYSTERESIS && false' \
    adapt::tests::the_cheaper_way_takes_nearly_every_request_after_the_exploration \
    --workspace --lib
# Backup: uncached files are read both ways in turns, never both at once.
mutant reads-never-try-buffered crates/recman-engine/src/adapt.rs \
    'return IoWay::Buffered;' 'return IoWay::Direct;' \
    adapt::tests::reads_take_turns_explore_each_way_whole_then_follow_the_leader \
    --workspace --lib
# Restore: a write turn counts the bytes the disk wrote in it, not those the page cache took.
mutant turns-count-handed-bytes crates/recman-engine/src/adapt.rs \
    '(Some(a), Some(b)) => b.saturating_sub(a),' '(Some(_), Some(_)) => t.bytes,' \
    adapt::tests::turns_count_what_the_disk_wrote_not_what_the_page_cache_took \
    --workspace --lib
# WAL: archive-push refuses a segment of another cluster.
mutant wal-of-another-cluster crates/recman-engine/src/archive/check.rs \
    'if sysid != db.system_identifier {' 'if sysid != db.system_identifier && false {' \
    archive::check::tests::refuses_what_is_not_wal_of_this_cluster \
    --workspace --lib
# WAL: a pusher's mark stands for a segment only while the file keeps its identity.
mutant wal-mark-hides-a-change crates/recman-engine/src/archive/seen.rs \
    '                && id == now' '                && (id == now || id.size > 0)' \
    archive::seen::tests::a_mark_stands_for_the_file_until_the_file_changes \
    --workspace --lib
# Catalog: completing a backup that was never recorded is refused.
mutant catalog-completes-a-ghost crates/recman-catalog/src/backup.rs \
    '            let n = write_backup(self, UPDATE_BACKUP, b, &ctx)?;' \
    '            let n = write_backup(self, UPDATE_BACKUP, b, &ctx)?.max(1);' \
    complete_backup_is_all_or_nothing \
    --workspace --test catalog
# Retention: REDUNDANCY n keeps n full backups, not one fewer.
mutant redundancy-off-by-one crates/recman-engine/src/retention.rs \
    'RetentionPolicy::Redundancy(r) => (r as usize).min(fulls.len()),' \
    'RetentionPolicy::Redundancy(r) => (r as usize).saturating_sub(1).min(fulls.len()),' \
    redundancy_keeps_every_covered_point_and_nothing_else \
    --workspace --test retention_props
# Retention: an incremental chain anchored on a kept full is kept whole.
mutant retention-drops-incrementals crates/recman-engine/src/retention.rs \
    'kept.extend(chain);' 'let _ = chain;' \
    incremental_chain_is_kept_with_its_base \
    --workspace --test retention_props
# The language: an incremental level out of range is refused in the parser.
mutant language-takes-any-level crates/recman-lang/src/parser/backup.rs \
    'if level > 4 {' 'if level > 9 {' \
    an_incremental_level_is_range_checked_in_either_word_order \
    --workspace --test units
# Pages: a checksum that does not match is a fault.
mutant page-checksum-ignored crates/recman-page/src/page.rs \
    'if computed != hdr.checksum {' 'if computed != hdr.checksum && false {' \
    flipped_byte_gives_checksum_fault \
    --workspace --test pages

if [[ $failed -ne 0 ]]; then
    echo "[mutants] FAILED: a guard did not catch its mutant (see above)" >&2
    exit 1
fi
echo "[mutants] every mutant was caught"
