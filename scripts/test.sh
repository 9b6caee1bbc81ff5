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
if [[ ",${RECMAN_TEST_SKIP:-}," != *,gcs,* ]]; then
    setup_fake_gcs
fi
# No skip for moto: its tests have no other server to run against.
setup_moto
# Nor for the browser: the fleet page's acceptance is a real browser's view of it.
setup_playwright
if [[ ",${RECMAN_TEST_SKIP:-}," != *,pg_full,* ]]; then
    setup_pg_full
    # import_basebackup_chain_pg17 runs 18's pg_basebackup against a 17 server.
    setup_pg_majors 17
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

# Test binaries run one after another under cargo test (RECMAN_TEST_JOBS=1, the default: the
# machine may be shared, e.g. with benchmarks, and cargo's own output is what developers know),
# or N at a time (CI sets 2): most tests wait on PostgreSQL (fsync, checkpoints, archiving),
# so two binaries at once keep two cores busy where one leaves them idle half the time.
jobs=${RECMAN_TEST_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || setup_die "RECMAN_TEST_JOBS=$jobs; hint: a number of test binaries to run at once, 1 or more"
alone_jobs=${RECMAN_ALONE_JOBS:-1}
[[ $alone_jobs =~ ^[1-9][0-9]*$ ]] || setup_die "RECMAN_ALONE_JOBS=$alone_jobs; hint: a number of the throttled test binaries to run at once, 1 or more"

# Binaries that must not share the machine with the pool, with the reason; they run once the
# others are done, RECMAN_ALONE_JOBS at a time (default 1). Each holds its own backups to a few
# MiB/s with the block-I/O throttle or a slow link, far below the disk's rate, so they can share
# the machine with each other where they could not with the pool's CPU-bound binaries
# (docs/testing.md, "CI's wall time").
declare -A RUN_ALONE=(
    # Each asserts which stage (disk, cpu, network) limited a backup under a throttle; another
    # binary's load on the two cores or the disk could make a different stage the slowest.
    [tuning_diagnosis]="names the bottleneck of a throttled backup"
    [tuning_advise]="measures throughput under throttles to advise"
    [tune_auto]="calibrates against a throttled device"
    # Names the slow input file of a backup from its waits; another binary's load on the two
    # cores made the channel wait for a cpu longer than for its input (seen under builds).
    [io_balance]="names the slow input of a backup from its waits"
)
# Of those, the ones that measure rates to a tolerance (a probe of about a second against the
# throttle): they run by themselves, after the others. Beside the other throttled binaries a
# probe's rate was off by more than its tolerance in one run of ten (the overlap of
# reads and writes below 0.3 where it is about 1.1 alone).
BY_ITSELF=" tuning_advise "
# The longest binaries first (40-77 s each, serially), so that the run does not end with one
# long binary on one core; the others follow in cargo's order.
LONGEST=(many_files immutable_s3 backup_restore import_pgbackrest wal_prefetch change_tracking
    incremental wal_receive image_copy failures fleet_restore retention)

# cargo test's positional test-name filter and everything after `--` go to each test binary;
# the rest (packages, --test NAME, features) to cargo. Options of cargo test that take a value
# (next word):
cargo_value_opts=" -p --package --exclude --test --bin --example --bench -F --features --target "
cargo_value_opts+="-j --jobs --profile --manifest-path --target-dir --color --config -Z --lockfile-path "
run_parallel() {
    local cargo_args=() bin_args=() selects_targets=0 expect_value=0 arg
    while [[ $# -gt 0 ]]; do
        arg=$1
        shift
        if [[ $expect_value -eq 1 ]]; then
            cargo_args+=("$arg")
            expect_value=0
            continue
        fi
        case $arg in
        --)
            bin_args+=("$@")
            break
            ;;
        --lib | --bins | --bin | --bin=* | --tests | --test | --test=* | --examples | --example | \
            --example=* | --benches | --bench | --bench=* | --all-targets | --doc)
            selects_targets=1
            ;;
        esac
        case $arg in
        -*=*) cargo_args+=("$arg") ;;
        -*)
            cargo_args+=("$arg")
            [[ $cargo_value_opts == *" $arg "* ]] && expect_value=1
            ;;
        *) bin_args=("$arg" "${bin_args[@]}") ;;
        esac
    done

    local dir
    dir=$(mktemp -d /tmp/recman-test-bins.XXXXXX)
    # shellcheck disable=SC2064 # expand now: dir is local
    trap "rm -rf '$dir' '$log_file'" EXIT
    echo "[test] building: cargo test ${scope[*]} --no-run ${cargo_args[*]}"
    if ! cargo test "${scope[@]}" --no-run --message-format=json-render-diagnostics \
        "${cargo_args[@]}" >"$dir/build.json"; then
        echo "[test] the test build failed (see above)" >&2
        return 101
    fi
    # One line per test executable: executable, package dir (the test's working directory and
    # CARGO_MANIFEST_DIR, as under cargo test), target name. No jq: CI's machine may lack it.
    local exe manifest name
    local -a order=() alone=() by_itself=()
    local -A dir_of=() name_of=()
    while IFS= read -r line; do
        # A target's own "test" says whether cargo tests it by default; the profile's, whether
        # this artifact is a test harness.
        [[ $line == *'"reason":"compiler-artifact"'* ]] || continue
        grep -qE '"profile":\{[^}]*"test":true' <<<"$line" || continue
        exe=$(grep -oE '"executable":"[^"]+"' <<<"$line" | sed 's/^"executable":"//; s/"$//') || continue
        manifest=$(grep -oE '"manifest_path":"[^"]+"' <<<"$line" | head -n 1 | sed 's/^"manifest_path":"//; s/"$//')
        name=$(basename "$exe")
        name=${name%-*}
        dir_of[$exe]=$(dirname "$manifest")
        name_of[$exe]=$name
        if [[ $BY_ITSELF == *" $name "* ]]; then
            by_itself+=("$exe")
        elif [[ -n ${RUN_ALONE[$name]:-} ]]; then
            alone+=("$exe")
        else
            order+=("$exe")
        fi
    done <"$dir/build.json"
    local -a first=() rest=()
    for name in "${LONGEST[@]}"; do
        for exe in "${order[@]}"; do
            [[ ${name_of[$exe]} == "$name" ]] && first+=("$exe")
        done
    done
    for exe in "${order[@]}"; do
        [[ " ${LONGEST[*]} " == *" ${name_of[$exe]} "* ]] || rest+=("$exe")
    done
    order=("${first[@]}" "${rest[@]}")

    # Doc-tests, which --no-run does not build, run where cargo test would run them: when no
    # option selects targets. They are one more job of the pool.
    local doc=0
    [[ $selects_targets -eq 0 ]] && doc=1
    if [[ ${#order[@]} -eq 0 && ${#alone[@]} -eq 0 && ${#by_itself[@]} -eq 0 ]]; then
        echo "[test] the build produced no test binary; hint: check the cargo arguments" >&2
        return 101
    fi
    echo "[test] ${#order[@]} test binaries, $jobs at a time$([[ $doc -eq 1 ]] && echo ', then the doc-tests'); $((${#alone[@]} + ${#by_itself[@]})) alone afterwards, $alone_jobs at a time, then ${#by_itself[@]} by itself"

    # run_one KEY DISPLAY-NAME COMMAND...: runs in the background with its own log, then prints
    # the log whole under a lock (never interleaved with another) and appends it to the log
    # the summary reads.
    run_one() {
        local key=$1 shown=$2
        shift 2
        local log=$dir/$key.log start=$SECONDS status
        "$@" >"$log" 2>&1
        status=$?
        echo "$status" >"$dir/$key.status"
        {
            flock 9
            {
                echo "[test] ---- $shown: exit $status, $((SECONDS - start)) s ----"
                cat "$log"
            } | tee -a "$log_file"
        } 9>"$dir/lock"
    }
    run_bin() {
        local exe=$1
        (cd "${dir_of[$exe]}" && CARGO_MANIFEST_DIR=${dir_of[$exe]} exec "$exe" "${bin_args[@]}")
    }
    local key
    for exe in "${order[@]}"; do
        setup_wait_slot "$jobs"
        key=$(basename "$exe")
        echo "[test] start ${name_of[$exe]} ($exe)"
        run_one "$key" "${name_of[$exe]}" run_bin "$exe" &
    done
    if [[ $doc -eq 1 ]]; then
        setup_wait_slot "$jobs"
        echo "[test] start doc-tests"
        run_one doc-tests doc-tests cargo test "${scope[@]}" --doc --no-fail-fast "${cargo_args[@]}" \
            -- "${bin_args[@]}" &
    fi
    wait
    for exe in "${alone[@]}"; do
        setup_wait_slot "$alone_jobs"
        key=$(basename "$exe")
        echo "[test] start ${name_of[$exe]} alone: ${RUN_ALONE[${name_of[$exe]}]} ($exe)"
        run_one "$key" "${name_of[$exe]}" run_bin "$exe" &
    done
    wait
    for exe in "${by_itself[@]}"; do
        key=$(basename "$exe")
        echo "[test] start ${name_of[$exe]} by itself: ${RUN_ALONE[${name_of[$exe]}]} ($exe)"
        run_one "$key" "${name_of[$exe]}" run_bin "$exe"
    done

    local failed=() f
    for f in "$dir"/*.status; do
        [[ -e $f ]] || continue
        [[ $(cat "$f") == 0 ]] || failed+=("$(basename "$f" .status)")
    done
    if [[ ${#failed[@]} -gt 0 ]]; then
        echo "[test] failed: ${failed[*]}"
        return 101
    fi
}

echo "[test] cargo test ${scope[*]} --no-fail-fast $* (RUST_TEST_THREADS=$RUST_TEST_THREADS, RECMAN_TEST_JOBS=$jobs${RECMAN_TEST_SKIP:+, RECMAN_TEST_SKIP=$RECMAN_TEST_SKIP})"
set +e
if [[ $jobs -eq 1 ]]; then
    # --no-fail-fast: one failing test binary must not hide the results of the others.
    cargo test "${scope[@]}" --no-fail-fast "$@" 2>&1 | tee "$log_file"
    status=${PIPESTATUS[0]}
else
    # Every binary runs whatever the others did, as with --no-fail-fast.
    run_parallel "$@"
    status=$?
fi
set -e

echo
echo "[test] summary:"
grep -E '^test result:' "$log_file" || echo "  (no test results)"
# A test skipped by name through RECMAN_TEST_SKIP, or a part of a test that cannot run here (an
# older major, a kernel without io_uring), passes in cargo's count but writes one
# `SKIPPED(name): reason` line (recman_media::testkit::missing_prerequisite and skipped_part);
# the line may share a line of the log with cargo's own `test x ... ` prefix, hence -o rather
# than an anchor. .ci/run fails on a name .ci/expected-skips does not list.
skip_lines=$(grep -oE 'SKIPPED\([a-z0-9_]+\): .*' "$log_file" || true)
if [[ -n $skip_lines ]]; then
    echo "[test] skipped (name: count, first reason):"
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
