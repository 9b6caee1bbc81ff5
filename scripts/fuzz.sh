#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, AddressSanitizer) of recman's decoders of outside input:
# the script parser (parse_script), the piece reader (piece_reader), the manifest parser
# (manifest), the plugin wire decoder (plugin_frame) and the key record (key_record); the
# targets are in fuzz/fuzz_targets/. One sanitized build, then SECONDS split evenly across
# the targets, as many running at once as there are cores (FUZZ_JOBS); each is seeded
# (the golden scripts, fuzz/seeds/<target>/) and prints its
# executions. Fails, printing the reproducer's path, if an input panics a target or breaks
# its round trip.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 60 s, all targets; FUZZ_SEED=N
# picks libFuzzer's seed, default 1, so that a CI run repeats the same search)
#
# cargo-fuzz is built once into the tools cache that setup.sh uses for s3s-fs.
# The targets need nightly flags (-Zsanitizer, sancov passes); this machine has
# only stable rustc, so they are unlocked with RUSTC_BOOTSTRAP=1 for this build
# alone, which lives in fuzz/target and never touches the main target/.
# Reproduce a crash (cargo-fuzz on PATH from the tools cache) with:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz --target-dir fuzz/target TARGET \
#       fuzz/artifacts/TARGET/<file>

set -euo pipefail

seconds=${1:-60}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || {
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]  (a positive whole number; got '$seconds')" >&2
    exit 2
}
shift $(($# > 0 ? 1 : 0))
targets=("$@")
((${#targets[@]})) || targets=(parse_script piece_reader manifest plugin_frame key_record)
per=$((seconds / ${#targets[@]}))
((per > 0)) || per=1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh" --no-build
cd "$ROOT"
# libfuzzer-sys compiles libFuzzer's C++ sources.
setup_install_missing "fuzzing tools" g++

CARGO_FUZZ_VERSION=0.13.2
tools=${RECMAN_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/recman-tools}
if [[ ! -x $tools/bin/cargo-fuzz ]] ||
    ! "$tools/bin/cargo-fuzz" --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
    echo "[fuzz] building cargo-fuzz $CARGO_FUZZ_VERSION into $tools (once; under a minute)"
    cargo install "cargo-fuzz@$CARGO_FUZZ_VERSION" --locked --root "$tools" >&2
fi
PATH="$tools/bin:$PATH"
export PATH

echo "[fuzz] building ${targets[*]} (AddressSanitizer, once)"
RUSTC_BOOTSTRAP=1 cargo fuzz build --fuzz-dir fuzz --target-dir fuzz/target --sanitizer address

marker=$(mktemp /tmp/recman-fuzz.XXXXXX)
state=$(mktemp -d /tmp/recman-fuzz-state.XXXXXX)
trap 'rm -f "$marker"; rm -rf "$state"' EXIT
# fuzz_one TARGET: one target's run; its summary line goes to $state/TARGET.
fuzz_one() {
    local target=$1 corpus artifacts log status execs found
    local -a dict
    corpus=fuzz/corpus/$target
    artifacts=fuzz/artifacts/$target
    mkdir -p "$corpus" "$artifacts"
    # Seeds, copied at run time (libFuzzer adds what it finds beside them; fuzz/.gitignore
    # keeps corpus/ out of git): the golden scripts and syntax errors for the parser, the
    # files of fuzz/seeds/<target>/ for the others.
    dict=()
    if [[ $target == parse_script ]]; then
        cp crates/recman-lang/tests/golden/*.rcv "$corpus/"
        for f in crates/recman-lang/tests/golden/errors/*.rcv; do
            cp "$f" "$corpus/error_${f##*/}"
        done
        dict=(-dict=fuzz/parse_script.dict)
    elif [[ -d fuzz/seeds/$target ]]; then
        cp fuzz/seeds/"$target"/* "$corpus/"
    fi
    log=$(mktemp /tmp/recman-fuzz-"$target".XXXXXX.log)
    echo "[fuzz] $target for ${per}s (corpus $corpus, $(find "$corpus" -type f | wc -l) inputs)"
    # The per-input NEW/REDUCE lines and the recommended dictionary go to the log only;
    # crash reports and the final stats are shown.
    set +e
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" \
        --fuzz-dir fuzz --target-dir fuzz/target --sanitizer address \
        -- -max_total_time="$per" -timeout=10 -seed="${FUZZ_SEED:-1}" "${dict[@]}" \
        -print_final_stats=1 2>&1 |
        tee "$log" |
        grep --line-buffered -E '^stat::(number_of_executed_units|new_units_added)|ERROR|panicked|SUMMARY|^==|Test unit written' |
        sed -u "s/^/[fuzz] $target: /"
    status=${PIPESTATUS[0]}
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    found=$(find "$artifacts" -type f -newer "$marker" 2>/dev/null | sort)
    if [[ $status -ne 0 || -n $found ]]; then
        echo "$target: FAILED after ${execs:-?} executions" >"$state/$target"
        if [[ -n $found ]]; then
            echo "[fuzz] $target FAILED: inputs that break it; reproducers:" >&2
            while read -r f; do echo "  $ROOT/$f" >&2; done <<<"$found"
            echo "[fuzz] reproduce: PATH=$tools/bin:\$PATH RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz --target-dir fuzz/target $target <reproducer>" >&2
        else
            echo "[fuzz] $target FAILED: cargo fuzz exited $status without a reproducer (build error?)" >&2
        fi
        echo "[fuzz] full log: $log" >&2
    else
        echo "$target: ${execs:-?} executions in ${per}s, no crash" >"$state/$target"
        rm -f "$log"
    fi
}
# Each target is one single-threaded libFuzzer process: as many at once as there are cores
# (FUZZ_JOBS), each still given its share of SECONDS and its seed, as when they ran one after
# another, and the wall time a fraction of it.
jobs=${FUZZ_JOBS:-$(nproc)}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "FUZZ_JOBS=$jobs; hint: a number of targets to run at once, 1 or more" >&2; exit 2; }
for target in "${targets[@]}"; do
    setup_wait_slot "$jobs"
    fuzz_one "$target" &
done
wait
failed=0
summary=()
for target in "${targets[@]}"; do
    line=$(cat "$state/$target" 2>/dev/null || echo "$target: FAILED (no result; the run died)")
    [[ $line == *FAILED* ]] && failed=1
    summary+=("$line")
done
printf '[fuzz] %s\n' "${summary[@]}"
exit "$failed"
