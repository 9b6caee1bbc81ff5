#!/usr/bin/env bash
# Runs recman's end-to-end core on other PostgreSQL majors: online backup under pgbench and a
# tablespace (backup_restore), point-in-time recovery (pitr), corruption detection
# (corruption) and the incremental suite (incremental), each against a real server of every
# named major. Server binaries come from scripts/setup.sh's setup_pg_majors; client tools
# stay Debian's 15. The rest of the suite runs on 15 in scripts/test.sh.
#
# Usage: scripts/test-majors.sh [majors...]     (default: 13 14 16 17 18; 15 = Debian's)
# Prints a summary per major and a final `total: N passed, N failed, N skipped` line; exits
# non-zero when a test failed that is not listed as known-failing below.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh" --no-build
cd "$ROOT"

# The core: "binary[@majors]" or "binary[@majors]:cargo test arguments" (a name filter, --skip NAME) of
# crates/recman-cli/tests. Chosen so that five majors add about ten minutes to CI on a 2-core
# machine (docs/testing.md has the figures). majors.rs holds an online backup under pgbench;
# what does not depend on the server's major stays on 15 only: backup_restore's matrix of
# channels and compression, the damaged-piece test (repository format), and the incremental
# chain and synthetic-full tests (merging in the repository). RECMAN_MAJORS_FULL=1 runs the
# whole of each binary instead.
CORE_TESTS=(
    majors
    backup_restore:tablespace
    pitr
    corruption:corrupt_page
    "incremental:--skip chains_of_differentials --skip a_synthetic_full"
    # WAL decoding differs by major; in CI the tracked chain runs on the oldest major (it passed on
    # 17 too when run by hand), on every major with RECMAN_MAJORS_FULL=1. Kept to one major
    # so that CI stays within its 30 minutes.
    "change_tracking@13:a_tracked_chain decoded_blocks"
)

# "<major>:<test binary>" pairs expected to fail, with the reason; they are run and reported
# but do not fail the script. Empty: every core test passes on every major.
declare -A KNOWN_FAILING=()

majors=("$@")
[[ ${#majors[@]} -eq 0 ]] && majors=(13 14 16 17 18)
for major in "${majors[@]}"; do
    [[ $major =~ ^1[3-8]$ ]] || setup_die "unsupported major $major; hint: name majors 13 to 18"
done
non15=()
for major in "${majors[@]}"; do
    [[ $major == 15 ]] || non15+=("$major")
done
[[ ${#non15[@]} -eq 0 ]] || setup_pg_majors "${non15[@]}"

export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}
echo "[majors] building the core test binaries"
binaries=()
for t in "${CORE_TESTS[@]}"; do
    head=${t%%:*}
    binaries+=("--test=${head%%@*}")
done
# --workspace, not -p recman-cli: cargo resolves features over the packages it selects, so -p
# would build the dependencies a second time with other features (36-39 s) instead of reusing
# scripts/test.sh's build; --test picks the binaries all the same.
cargo test --workspace --no-run "${binaries[@]}" >/dev/null 2>&1 ||
    cargo test --workspace --no-run "${binaries[@]}"

# Majors run side by side, RECMAN_MAJORS_JOBS at a time (2 by default): their tests mostly wait
# on PostgreSQL (fsync, checkpoints, recovery), so one major after another left the two cores
# half idle. Each major writes to its own log, shown whole when it ends, and leaves its counts
# in a file the summary adds up.
jobs=${RECMAN_MAJORS_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || setup_die "RECMAN_MAJORS_JOBS=$jobs; hint: a number of majors to run at once, 1 or more"
dir=$(mktemp -d /tmp/recman-majors.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# run_major MAJOR: the core against one major; writes "$dir/MAJOR.counts" (passed failed
# skipped unexpected) and "$dir/MAJOR.summary".
run_major() {
    local major=$1 log=$dir/$1.test.log
    if [[ $major == 15 ]]; then
        unset RECMAN_TEST_PG_BINDIR
    else
        export RECMAN_TEST_PG_BINDIR=$RECMAN_PG_MAJORS_DIR/$major/bin
    fi
    local version
    version=$("${RECMAN_TEST_PG_BINDIR:-/usr/lib/postgresql/15/bin}/postgres" --version)
    echo "[majors] PostgreSQL $major: $version"
    local p=0 f=0 s=0 unexpected=0 start=$SECONDS notes="" t head status tp1 tf1 ts1
    local -a filter
    for t in "${CORE_TESTS[@]}"; do
        head=${t%%:*}
        # "binary@13,17": only on those majors (unless RECMAN_MAJORS_FULL=1).
        if [[ $head == *@* && ${RECMAN_MAJORS_FULL:-0} != 1 && ",${head#*@}," != *",$major,"* ]]; then
            continue
        fi
        t=${head%%@*}${t#"$head"}
        filter=()
        if [[ $t == *:* && ${RECMAN_MAJORS_FULL:-0} != 1 ]]; then
            read -r -a filter <<<"${t#*:}"
        fi
        echo "[majors] $major: cargo test --workspace --test ${t%%:*} ${filter[*]}"
        set +e
        cargo test --workspace --test "${t%%:*}" -- "${filter[@]}" >"$log" 2>&1
        status=$?
        set -e
        cat "$log"
        read -r tp1 tf1 ts1 < <(awk '/^test result:/ {
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^passed/) p += $(i - 1)
                    if ($i ~ /^failed/) f += $(i - 1)
                    if ($i ~ /^ignored/) s += $(i - 1)
                }
             } END { printf "%d %d %d\n", p, f, s }' "$log")
        if [[ $status -ne 0 && $tf1 -eq 0 ]]; then
            tf1=1 # did not build or crashed before reporting: count it as a failure
        fi
        if [[ $status -eq 0 && $((tp1 + tf1)) -eq 0 ]]; then
            # A filter that matches no test (a test renamed) would otherwise pass with nothing run.
            notes+=" ${t%%:*}: no test ran (the filter '${filter[*]}' matches nothing)"
            unexpected=1
        fi
        # A part of a test that this major cannot run (tests' SKIPPED lines) counts as skipped.
        ts1=$((ts1 + $(grep -cE 'SKIPPED\([a-z0-9_]+\): ' "$log" || true)))
        p=$((p + tp1)) f=$((f + tf1)) s=$((s + ts1))
        if [[ $tf1 -gt 0 ]]; then
            if [[ -n ${KNOWN_FAILING[$major:${t%%:*}]:-} ]]; then
                notes+=" ${t%%:*}: known-failing (${KNOWN_FAILING[$major:${t%%:*}]})"
            else
                notes+=" ${t%%:*}: FAILED"
                unexpected=1
            fi
        fi
    done
    echo "PostgreSQL $major: $p passed, $f failed, $s skipped in $((SECONDS - start))s${notes:+;$notes}" >"$dir/$major.summary"
    echo "$p $f $s $unexpected" >"$dir/$major.counts"
}

echo "[majors] ${#majors[@]} majors, $jobs at a time"
for major in "${majors[@]}"; do
    setup_wait_slot "$jobs"
    # The whole major's output at once, under a lock, so that two majors' lines never mix.
    (
        run_major "$major" >"$dir/$major.out" 2>&1
        {
            flock 9
            cat "$dir/$major.out"
        } 9>"$dir/lock"
    ) &
done
wait

summary=()
tp=0 tf=0 ts=0 unexpected=0
for major in "${majors[@]}"; do
    if [[ ! -e $dir/$major.counts ]]; then
        summary+=("PostgreSQL $major: did not finish (see its output above)")
        unexpected=1
        continue
    fi
    read -r p f s u <"$dir/$major.counts"
    summary+=("$(cat "$dir/$major.summary")")
    tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
    [[ $u -eq 0 ]] || unexpected=1
done

echo
echo "[majors] summary:"
printf '  %s\n' "${summary[@]}"
echo "total: $tp passed, $tf failed, $ts skipped"
exit "$unexpected"
