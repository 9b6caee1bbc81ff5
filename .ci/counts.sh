# Sourced by .ci/run: what a green run must have run. A run that found fewer test binaries or
# ran fewer tests than .ci/test-counts records, or that skipped a part .ci/expected-skips does
# not list, fails, so that a test lost from the build or a part that quietly stopped running
# is seen. Raise the counts in the same change that adds tests (`ci_counts_of LOG` prints a
# run's figures); lower them only with the reason in the commit.

# ci_counts_of LOG: "binaries N tests N" of a scripts/test.sh or scripts/test-majors.sh log
# (tests = passed + failed + skipped from its closing `total:` line; binaries from test.sh's
# "[test] N test binaries ...; M alone afterwards" line, N + M, 0 for the majors).
ci_counts_of() {
    local log=$1 binaries tests
    # "[test] N test binaries, J at a time...; M alone afterwards": N + M.
    binaries=$(grep -E '^\[test\] [0-9]+ test binaries' "$log" | tail -n 1 |
        sed -E 's/^\[test\] ([0-9]+) test binaries.*; ([0-9]+) alone afterwards.*/\1 \2/' |
        awk '{ print $1 + $2 }' || true)
    tests=$(grep -E '^total: ' "$log" | tail -n 1 |
        awk '{ print $2 + $4 + $6 }' || true)
    echo "binaries ${binaries:-0} tests ${tests:-0}"
}

# ci_check_run RUN LOG: RUN is `suite` or `majors`, the first word of the lines of
# .ci/test-counts and .ci/expected-skips that apply to it.
ci_check_run() {
    local run=$1 log=$2 root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local -a got
    read -r -a got < <(ci_counts_of "$log")
    local what want have
    while read -r r what want _; do
        [[ $r == "$run" ]] || continue
        case $what in
        binaries) have=${got[1]} ;;
        tests) have=${got[3]} ;;
        *) continue ;;
        esac
        if [[ $have -lt $want ]]; then
            echo "[ci] $run: $have $what ran, .ci/test-counts expects at least $want; hint: a test binary or test was lost (a build filter, a cfg, a deleted file), or lower the count deliberately" >&2
            exit 1
        fi
        echo "[ci] $run: $have $what (at least $want expected)"
    done < <(grep -vE '^\s*(#|$)' "$root/.ci/test-counts")
    local name unexpected=0
    while read -r name; do
        if ! grep -qE "^$run $name( |$)" "$root/.ci/expected-skips"; then
            echo "[ci] $run: SKIPPED($name) is not in .ci/expected-skips:" >&2
            grep -oE "SKIPPED\($name\): .*" "$log" | head -n 1 >&2
            unexpected=1
        fi
    done < <(grep -oE 'SKIPPED\([a-z0-9_]+\)' "$log" | sed 's/^SKIPPED(//; s/)$//' | sort -u)
    if [[ $unexpected -ne 0 ]]; then
        echo "[ci] $run: a part of the suite was skipped that CI does not expect; hint: provide what it needs, or list it with its reason in .ci/expected-skips" >&2
        exit 1
    fi
}
