#!/usr/bin/env bash
# Coverage-guided fuzzing of the script parser: runs the cargo-fuzz target
# fuzz/fuzz_targets/parse_script.rs (libFuzzer, AddressSanitizer) for SECONDS,
# seeded with the golden scripts and guided by fuzz/parse_script.dict. Fails,
# printing the reproducer's path, if an input panics the parser or breaks the
# print/re-parse round trip.
#
# Usage: scripts/fuzz.sh [SECONDS]   (default 60; FUZZ_SEED=N picks libFuzzer's seed,
# default 1, so that a CI run repeats the same search; set another one to explore)
#
# cargo-fuzz is built once into the tools cache that setup.sh uses for s3s-fs.
# The target needs nightly flags (-Zsanitizer, sancov passes); this machine has
# only stable rustc, so they are unlocked with RUSTC_BOOTSTRAP=1 for this build
# alone, which lives in fuzz/target and never touches the main target/.
# Reproduce a crash (cargo-fuzz on PATH from the tools cache) with:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir fuzz/target parse_script \
#       fuzz/artifacts/parse_script/<file>

set -euo pipefail

seconds=${1:-60}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || {
    echo "usage: scripts/fuzz.sh [SECONDS]  (a positive whole number; got '$seconds')" >&2
    exit 2
}

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

target=parse_script
corpus=fuzz/corpus/$target
artifacts=fuzz/artifacts/$target
mkdir -p "$corpus" "$artifacts"
# Seeds: the golden scripts and the golden syntax errors, copied at run time (libFuzzer adds
# what it finds beside them; fuzz/.gitignore keeps all of it out of git).
cp crates/recman-lang/tests/golden/*.rcv "$corpus/"
for f in crates/recman-lang/tests/golden/errors/*.rcv; do
    cp "$f" "$corpus/error_${f##*/}"
done
marker=$(mktemp /tmp/recman-fuzz.XXXXXX)
log=$(mktemp /tmp/recman-fuzz.XXXXXX.log)
# The log is kept when the run fails.
trap 'rm -f "$marker"' EXIT

echo "[fuzz] cargo fuzz run $target for ${seconds}s (AddressSanitizer; corpus $corpus, $(find "$corpus" -type f | wc -l) inputs)"
# The per-input NEW/REDUCE lines and the recommended dictionary go to the log only; progress
# (pulse), crash reports and the final stats are shown.
set +e
RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" \
    --fuzz-dir fuzz --target-dir fuzz/target --sanitizer address \
    -- -max_total_time="$seconds" -timeout=10 -seed="${FUZZ_SEED:-1}" -dict=fuzz/parse_script.dict \
    -print_final_stats=1 2>&1 |
    tee "$log" |
    grep --line-buffered -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE)[[:space:]]|^[[:space:]]+NEW_FUNC|^"'
status=${PIPESTATUS[0]}
set -e

found=$(find "$artifacts" -type f -newer "$marker" 2>/dev/null | sort)
if [[ $status -ne 0 || -n $found ]]; then
    if [[ -n $found ]]; then
        echo "[fuzz] FAILED: the fuzzer found inputs that break the parser; reproducers:" >&2
        while read -r f; do echo "  $ROOT/$f" >&2; done <<<"$found"
        echo "[fuzz] reproduce: PATH=$tools/bin:\$PATH RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir fuzz/target $target <reproducer>" >&2
    else
        echo "[fuzz] FAILED: cargo fuzz exited $status without a reproducer (build error?)" >&2
    fi
    echo "[fuzz] full log: $log" >&2
    exit $((status == 0 ? 1 : status))
fi
rm -f "$log"
echo "[fuzz] no crash in ${seconds}s"
